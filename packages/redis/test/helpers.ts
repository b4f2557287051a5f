import type { LockCapabilities, LockProvider } from '@fencelock/core';
import { Cluster, type ClusterNode } from 'ioredis';
import { redisCommand } from '@fencelock/test-infra';
import { RedisLockProvider } from '../src/index.js';

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

/** Drops a provider's connection as a crashed process would: no release, no QUIT. */
export async function crashProvider(provider: LockProvider): Promise<void> {
  if (!(provider instanceof RedisLockProvider)) throw new Error('crashProvider needs a RedisLockProvider');
  provider.client.disconnect();
}

/** Script calls (EVAL and EVALSHA) a server has run so far, from `INFO commandstats`. */
export async function scriptCallsOn(port: number): Promise<number> {
  const info = String(await redisCommand(port, ['INFO', 'commandstats']));
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}
