import { describeLockProvider } from '@fencelock/conformance';
import { sleep, startRedisCluster, type DedicatedRedisCluster } from '@fencelock/test-infra';
import { afterAll, beforeAll } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { EXPECTED_CAPABILITIES, clusterNode, crashProvider } from './helpers.js';

// A dedicated 3-master cluster with AOF + appendfsync always, so the suite's fault cases (server
// paused past the TTL, every node killed and restarted, a crashed client) run on a real cluster too.
let cluster: DedicatedRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, persistence: true });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

describeLockProvider({
  name: 'redis (dedicated cluster of 3 masters, appendfsync always, fault harness)',
  createProvider: () =>
    createRedisLockProvider({ clusterNodes: cluster.urls.map(clusterNode), defaultTtlMs: 2_000, requestTimeoutMs: 500 }),
  expectCapabilities: EXPECTED_CAPABILITIES,
  harness: {
    pauseBackend: async (ms) => {
      await cluster.pause();
      try {
        await sleep(ms);
      } finally {
        await cluster.resume();
      }
    },
    restartBackend: () => cluster.restart(),
    crashProvider,
  },
  shortTtlMs: 1_500,
  keyPrefix: 'conf}{ormance:',
});
