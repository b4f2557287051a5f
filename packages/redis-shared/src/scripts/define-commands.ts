import { acquireScript } from './acquire-script.js';
import { extendManyScript } from './extend-many-script.js';
import { extendScript } from './extend-script.js';
import { inspectScript } from './inspect-script.js';
import type { RedisLockScript } from './redis-lock-script.js';
import { releaseScript } from './release-script.js';

/** The three scripts of the fencelock Redis lock protocol (see each script's module for what it guarantees). */
export const redisLockScripts: {
  readonly acquire: RedisLockScript;
  readonly release: RedisLockScript;
  readonly extend: RedisLockScript;
} = Object.freeze({ acquire: acquireScript, release: releaseScript, extend: extendScript });

/**
 * An ioredis `Redis` or `Cluster` (ioredis 5 or 6, or iovalkey), as far as these helpers use it: its
 * `defineCommand`, and the command functions it then adds. Structural, so that the declarations name
 * no ioredis type.
 */
export interface ScriptDefiningClient {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
}

/** Typed calls of {@link redisLockScripts} on one client, from {@link defineRedisLockCommands}. */
export interface RedisLockCommands {
  /**
   * `SET lockKey ownerId NX PX ttlMs`, then the next fencing token from `fenceKey` (which must be in
   * the same hash slot on a cluster). Resolves the token, or `undefined` when the key is held by
   * another owner. If `lockKey` already holds `ownerId` (a retry after a lost reply), it is taken
   * over with the new TTL and a fresh, larger token.
   */
  acquire(lockKey: string, fenceKey: string, ownerId: string, ttlMs: number): Promise<bigint | undefined>;
  /** Deletes `lockKey` only if its value is `ownerId`; resolves whether it did. */
  release(lockKey: string, ownerId: string): Promise<boolean>;
  /** `PEXPIRE lockKey ttlMs` only if its value is `ownerId` (never SET); resolves whether it did. */
  extend(lockKey: string, ownerId: string, ttlMs: number): Promise<boolean>;
}

/** A registered script command: its keys and arguments in, the server's reply out. */
export type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

/** The variable-arity name of a script: the caller passes the number of keys first. */
export function variadicCommandName(script: RedisLockScript): string {
  return `${script.name}Variadic`;
}

/** The provider's own read and batch scripts (see their modules); registered with the others. */
export { extendManyScript, inspectScript };

/**
 * Registers each protocol script (and the inspect and extend-many scripts) on `client` twice: with its fixed
 * `numberOfKeys` under `script.name`, and variadic (number of keys as the first argument) under
 * {@link variadicCommandName}, for the provider's optional side keys. The Lua is the same, so both
 * share one SHA in the server's script cache. Idempotent.
 */
export function registerRedisLockScripts(client: ScriptDefiningClient): void {
  const commands = client as unknown as Record<string, unknown>;
  for (const script of [...Object.values(redisLockScripts), inspectScript, extendManyScript]) {
    if (typeof commands[script.name] !== 'function') {
      client.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    const variadic = variadicCommandName(script);
    if (typeof commands[variadic] !== 'function') {
      client.defineCommand(variadic, { lua: script.lua });
    }
  }
}

/** The registered command function `name` on `client`, bound to it. */
export function scriptCall(client: ScriptDefiningClient, name: string): ScriptCall {
  const command = (client as unknown as Record<string, unknown>)[name];
  if (typeof command !== 'function') {
    throw new Error(`script command ${name} is not registered on this client`);
  }
  return (command as ScriptCall).bind(client);
}

/**
 * Registers {@link redisLockScripts} on `client` (idempotently; ioredis then runs them with EVALSHA and
 * falls back to EVAL on NOSCRIPT) and returns typed functions calling them.
 */
export function defineRedisLockCommands(client: ScriptDefiningClient): RedisLockCommands {
  registerRedisLockScripts(client);
  const acquire = scriptCall(client, redisLockScripts.acquire.name);
  const release = scriptCall(client, redisLockScripts.release.name);
  const extend = scriptCall(client, redisLockScripts.extend.name);
  return {
    async acquire(lockKey, fenceKey, ownerId, ttlMs) {
      const token = await acquire(lockKey, fenceKey, ownerId, ttlMs);
      return token === null || token === undefined ? undefined : BigInt(String(token));
    },
    async release(lockKey, ownerId) {
      return Number(await release(lockKey, ownerId)) === 1;
    },
    async extend(lockKey, ownerId, ttlMs) {
      return Number(await extend(lockKey, ownerId, ttlMs)) === 1;
    },
  };
}

/**
 * The extend-many script (see `extend-many-script.ts`) on `client` as a function taking its keys and
 * args (keys per lock first), registered if needed. Used by the batcher of automatic extensions in
 * `@fencelock/redis` and `@fencelock/redlock`.
 */
export function extendManyCommand(client: ScriptDefiningClient): (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown> {
  registerRedisLockScripts(client);
  const call = scriptCall(client, variadicCommandName(extendManyScript));
  return (keys, args) => call(keys.length, ...keys, ...args);
}
