/**
 * Providers over different client libraries on one key — ioredis 5 (the default client, from a URL),
 * ioredis 6 (RESP3), iovalkey, node-redis 6 (RESP3), node-redis 5 (RESP2) and Valkey GLIDE 2
 * (RESP3) — exclude each other and hand the lock on to each other (release announcements reach every family's subscriber), with
 * fencing tokens increasing across them: the history of every acquire, fenced write and release is
 * checked by the history checker (mutual exclusion, token order, fenced writes).
 */
import type { LockProvider } from '@fencelock/core';
import { checkHistory, createFencedStoreClient, createHistoryWriter, createLockRecorder, readHistoryFile, startFencedStore } from '@fencelock/history-checker';
import { topology } from '@fencelock/test-infra';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { CLIENT_FLAVOURS, handedClients } from './clients.js';
import { clusterNode } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();
const directory = mkdtempSync(join(tmpdir(), 'fencelock-mixed-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const ROUNDS = 4;
const HANDED = [CLIENT_FLAVOURS.ioredis6Resp3, CLIENT_FLAVOURS.iovalkey, CLIENT_FLAVOURS.nodeRedis6Resp3, CLIENT_FLAVOURS.nodeRedis5Resp2, CLIENT_FLAVOURS.glideResp3];

for (const where of ['single server', 'cluster'] as const) {
  describe(`six client libraries on one key (${where})`, () => {
    it('exclude each other, hand the lock on, and fence in one increasing order', async () => {
      const path = join(directory, `${where}.jsonl`);
      const writer = createHistoryWriter({ path, run: `mixed-${where}` });
      const store = await startFencedStore();
      const storeClient = createFencedStoreClient(store.url);
      const providers: [string, LockProvider][] = [];
      const key = `mixed:${randomUUID()}`;
      try {
        const byDefault =
          where === 'cluster'
            ? createRedisLockProvider({ clusterNodes: redisClusterUrls.map(clusterNode), defaultTtlMs: 2_000 })
            : createRedisLockProvider({ connection: redisUrl, defaultTtlMs: 2_000 });
        providers.push(['ioredis 5 (default)', byDefault]);
        for (const flavour of HANDED) {
          const handed = handedClients(() => (where === 'cluster' ? flavour.cluster(redisClusterUrls) : flavour.standalone(redisUrl)));
          providers.push([flavour.name, await handed.createProvider()]);
        }
        const grantedTo: string[] = [];
        await Promise.all(
          providers.map(async ([proc, provider]) => {
            const recorder = createLockRecorder({ proc, sink: (event) => writer.record(event) });
            const unwatch = recorder.watch(provider);
            try {
              for (let round = 0; round < ROUNDS; round += 1) {
                // A TTL far above event-loop stalls on a loaded machine: no holder here ever expires.
                const handle = await recorder.acquire(provider, key, { ttlMs: 5_000, waitMs: 20_000 });
                if (handle === undefined) throw new Error(`${proc} could not acquire`);
                grantedTo.push(proc);
                expect(await recorder.write(handle, storeClient, `${proc}:${round}`)).toBe(true);
                expect(await recorder.release(handle)).toBe(true);
              }
            } finally {
              unwatch();
            }
          }),
        );
        expect(new Set(grantedTo).size).toBe(providers.length);
      } finally {
        writer.close();
        await Promise.all(providers.map(([, provider]) => provider.close()));
        await store.close();
      }
      const result = checkHistory(readHistoryFile(path), { fencedWrites: store.log, finalReads: { [key]: store.values(key) }, lossSignalBoundMs: 5_000 });
      expect(result.violations).toEqual([]);
      expect(result.stats).toMatchObject({ acquisitions: providers.length * ROUNDS, fencedWrites: providers.length * ROUNDS, fenceRejections: 0 });
    }, 60_000);
  });
}
