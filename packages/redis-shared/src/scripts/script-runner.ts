import { createHash } from 'node:crypto';
import type { RedisLockScript } from './redis-lock-script.js';

/** Arguments of a script call: the number of keys first, then the keys, then ARGV. */
export type ScriptArgument = string | number;

/** What a {@link ScriptRunner} needs of a client: the two script commands, and where a loaded script is known. */
export interface ScriptTransport {
  /** `EVAL` with the script or `EVALSHA` with its SHA, then `args` (see `LockClient.sendScript`). */
  sendScript(command: 'eval' | 'evalsha', body: string, args: readonly ScriptArgument[]): Promise<unknown>;
  /** The connection a script loaded now is known on; `undefined` while there is none (see `LockClient.scriptScope`). */
  scriptScope(): object | undefined;
}

/**
 * One script on one client: the script itself (EVAL, which loads it) until a call on the current
 * connection succeeded, then EVALSHA. When a call fails, `runAgain` sends it again as EVAL if the
 * server did not know the script (NOSCRIPT: a restarted or flushed server, a cluster node that never
 * ran it) and rejects with the failure otherwise.
 *
 * ioredis' `defineCommand` costs a large share of an uncontended acquire on each call: the arguments
 * copied three times, a promise and two closures for its NOSCRIPT handling whether or not it is
 * needed. Here the fallback lives in the caller's own failure path, which it has anyway.
 */
export class ScriptRunner {
  /** The script's SHA-1, as EVALSHA names it. */
  readonly sha: string;
  readonly #client: ScriptTransport;
  readonly #lua: string;
  // The connection on which a call last succeeded (the cluster client as a whole): EVALSHA there.
  #loadedOn: object | undefined;

  constructor(client: ScriptTransport, script: Pick<RedisLockScript, 'lua'>) {
    this.#client = client;
    this.#lua = script.lua;
    this.sha = scriptSha(script.lua);
  }

  /** Runs the script with `args` (number of keys first). */
  run(args: readonly ScriptArgument[]): Promise<unknown> {
    const connection = this.#client.scriptScope();
    if (connection !== undefined && connection === this.#loadedOn) return this.#client.sendScript('evalsha', this.sha, args);
    // A connection that may not know the script yet (a new one, or a paused server whose EVALSHA
    // would time out and later fail): the script itself, so that the call runs whenever it arrives.
    return this.#client.sendScript('eval', this.#lua, args).then((reply) => {
      // A call queued before the socket was up went out on the one that answered it: a reply is
      // handed over in the turn that read it, before any reconnect can replace that socket.
      this.#loadedOn = connection ?? this.#client.scriptScope();
      return reply;
    });
  }

  /**
   * After `run` failed with `error`, for callers that must not send a call twice (a resent Redlock
   * acquire could land after that round's release): on NOSCRIPT, the next `run` sends the script
   * itself again; nothing is resent now.
   */
  failed(error: unknown): void {
    if (isNoScriptError(error)) this.#loadedOn = undefined;
  }

  /** After `run` failed with `error`: EVAL with the same `args` on NOSCRIPT, else a rejection with `error`. */
  runAgain(error: unknown, args: readonly ScriptArgument[]): Promise<unknown> {
    if (!isNoScriptError(error)) return Promise.reject(error);
    this.#loadedOn = undefined;
    return this.run(args);
  }
}

const shas = new Map<string, string>();

/** The SHA-1 of `lua`, as the server computes it (hex). */
export function scriptSha(lua: string): string {
  let sha = shas.get(lua);
  if (sha === undefined) {
    sha = createHash('sha1').update(lua).digest('hex');
    shas.set(lua, sha);
  }
  return sha;
}

/**
 * Whether `error` is the server's NOSCRIPT reply (it does not have the script in its cache): the
 * reply itself (ioredis, node-redis) or Valkey GLIDE's rendering of it (`… NoScriptError: …`).
 */
export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && (error.message.startsWith('NOSCRIPT') || error.message.includes('NoScriptError:'));
}
