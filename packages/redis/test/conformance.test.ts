import { describeLockProvider } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import type { Cluster } from 'ioredis';
import { afterAll } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { EXPECTED_CAPABILITIES, backendWaiters, crashProvider, deleteLockKey, newCluster, onCluster, onServer } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();
const redisPort = Number(new URL(redisUrl).port || 6379);

describeLockProvider({
  name: 'redis (single, shared server)',
  createProvider: () => createRedisLockProvider({ connection: redisUrl, defaultTtlMs: 2_000 }),
  expectCapabilities: EXPECTED_CAPABILITIES,
  harness: { crashProvider, backendWaiters: backendWaiters(onServer(redisPort)), deleteLock: deleteLockKey(onServer(redisPort)) },
  shortTtlMs: 500,
});

// A user's ioredis Cluster, handed to the provider (which must never close it). The key prefix has
// a '}' and an unclosed '{', so every key is hashed whole and the side keys need their own tag.
const clusters: Cluster[] = [];
// Reads the waiter registries for the harness (never handed to a provider).
const inspector = newCluster(redisClusterUrls);
afterAll(() => {
  for (const cluster of clusters.splice(0)) cluster.disconnect();
  inspector.disconnect();
});

describeLockProvider({
  name: 'redis (cluster of 3 masters, shared)',
  createProvider: () => {
    const cluster = newCluster(redisClusterUrls);
    clusters.push(cluster);
    return createRedisLockProvider({ client: cluster, defaultTtlMs: 2_000 });
  },
  expectCapabilities: EXPECTED_CAPABILITIES,
  harness: { crashProvider, backendWaiters: backendWaiters(onCluster(inspector)), deleteLock: deleteLockKey(onCluster(inspector)) },
  shortTtlMs: 500,
  keyPrefix: 'conf}{ormance:',
});
