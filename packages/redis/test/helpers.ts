import type { LockCapabilities, LockProvider } from '@fencelock/core';
import { Cluster, type ClusterNode } from 'ioredis';
import { abortedWithin, nextEvent } from '@fencelock/conformance';
import { redisCommand, type TcpProxy } from '@fencelock/test-infra';
import { expect } from 'vitest';
import type { SupportedRedisClient } from '@fencelock/redis-shared';
import { RedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';

/** The capabilities every Redis provider must report (an assertion in the suite, never a switch). */
export const EXPECTED_CAPABILITIES: Partial<LockCapabilities> = {
  fencing: 'per-key',
  notify: true,
  lossDetection: true,
  extend: true,
  fifo: false,
  readWrite: false,
  expiry: 'per-lock',
  ttlResolutionMs: 1,
  minTtlMs: 100,
  deletionNotice: 'renewal',
  semaphore: 'multi-permit',
  election: 'polled',
};

/** `redis://host:port` → an ioredis cluster startup node. */
export function clusterNode(url: string): { host: string; port: number } & ClusterNode {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port) };
}

/** A fresh ioredis `Cluster` on the given nodes (no client-side key prefix). */
export function newCluster(urls: readonly string[]): Cluster {
  const cluster = new Cluster(urls.map(clusterNode), {
    redisOptions: { commandTimeout: 2_000, maxRetriesPerRequest: 2 },
  });
  cluster.on('error', () => undefined);
  return cluster;
}

/** Drops a client's connection at once, whatever its family (ioredis `disconnect`, node-redis `destroy`, GLIDE `close`). */
export function dropClient(client: SupportedRedisClient): void {
  const methods = client as unknown as { disconnect?: () => void; destroy?: () => void; close?: () => void; status?: unknown; isOpen?: boolean; isClosed?: boolean };
  if (typeof methods.status === 'string') methods.disconnect?.();
  else if (typeof methods.isClosed === 'boolean') {
    if (!methods.isClosed) methods.close?.();
  }
  // node-redis refuses to destroy a client twice.
  else if (methods.isOpen === true) methods.destroy?.();
}

/** Drops a provider's connection as a crashed process would: no release, no QUIT. */
export async function crashProvider(provider: LockProvider): Promise<void> {
  if (!(provider instanceof RedisLockProvider)) throw new Error('crashProvider needs a RedisLockProvider');
  dropClient(provider.client);
}

/** Script calls (EVAL and EVALSHA) a server has run so far, from `INFO commandstats`. */
export async function scriptCallsOn(port: number): Promise<number> {
  const info = String(await redisCommand(port, ['INFO', 'commandstats']));
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

// The live entries of a waiter registry: scored by the server's time (ms) until which each lasts, so
// an entry whose owner stopped renewing it is not counted once it lapsed.
const LIVE_WAITERS_LUA = `
local now = redis.call('TIME')
return redis.call('ZCOUNT', KEYS[1], '(' .. (now[1] * 1000 + math.floor(now[2] / 1000)), '+inf')
`;

/** Runs one command on the server (or cluster) holding the key and resolves its reply. */
export type RunCommand = (args: readonly (string | number)[]) => Promise<unknown>;

/**
 * The conformance harness's `backendWaiters` for a provider with the default `keyPrefix` (`''`):
 * how many owners are registered in the key's waiter registry, lapsed entries not counted (a holder
 * is never in it).
 */
export function backendWaiters(run: RunCommand): (key: string) => Promise<number> {
  return async (key) => Number(await run(['EVAL', LIVE_WAITERS_LUA, 1, redisLockKeys('', key).waiters]));
}

/** The conformance harness's `deleteLock`: an operator's `DEL` of the lock key (side keys stay). */
export function deleteLockKey(run: RunCommand): (key: string) => Promise<void> {
  return async (key) => {
    await run(['DEL', redisLockKeys('', key).lock]);
  };
}

/** A {@link RunCommand} on a single server, over a fresh connection per command. */
export function onServer(port: number): RunCommand {
  return (args) => redisCommand(port, args.map(String));
}

/** A {@link RunCommand} on a cluster, through an ioredis `Cluster` (which routes by the key's slot). */
export function onCluster(cluster: Cluster): RunCommand {
  return ([command, ...args]) => cluster.call(String(command), ...args);
}

/**
 * The connection-reset fault on `through` (a provider connected through `proxy` to the server on
 * `serverPort`): both its locks turn uncertain (within `uncertainWithinMs`); one is deleted while it
 * is cut off. After the reset the kept lock recovers and the deleted one is lost (`taken-over`).
 */
export async function expectResetRecoversOrLoses(
  through: LockProvider,
  proxy: Pick<TcpProxy, 'setMode'>,
  serverPort: number,
  [kept, taken]: readonly [string, string],
  uncertainWithinMs = 5_000,
): Promise<void> {
  const keptLock = await through.acquire(kept);
  const takenLock = await through.acquire(taken);
  const uncertain = nextEvent(through, 'uncertain', (e) => e.ownerId === keptLock.ownerId, uncertainWithinMs);
  const recovered = nextEvent(through, 'recovered', (e) => e.ownerId === keptLock.ownerId, 10_000);
  proxy.setMode('reset');
  await uncertain;
  expect(keptLock.state).toBe('uncertain');
  // While this client is cut off, the second lock is deleted behind its back (as an expiry would).
  expect(await redisCommand(serverPort, ['DEL', redisLockKeys('', taken).lock])).toBe(1);
  proxy.setMode('pass');
  await recovered;
  expect(keptLock.state).toBe('held');
  const reason = await abortedWithin(takenLock.signal, 10_000, 'the loss found at reconnect');
  expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
  expect(await keptLock.release()).toBe(true);
}
