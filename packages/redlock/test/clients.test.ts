/**
 * Redlock over every supported client library: the conformance suite over five masters through each
 * of the six — the whole suite through the first client of each family (ioredis 5 in
 * conformance.test.ts, node-redis 6 (RESP3) and Valkey GLIDE 2 here), and its seam cases through
 * the others (ioredis 6 (RESP3), iovalkey, node-redis 5 (RESP2)): the cases where a second client of
 * a family can differ from the first — replies decoded under its protocol, waiting woken through its
 * subscriber, extension, a dropped connection, close (see @fencelock/redis' test/seam-cases.ts for
 * the list and why). Reloading the scripts after NOSCRIPT is checked per library in
 * topologies.test.ts. Then one provider per library on the same masters and one key, their history
 * checked by the history checker, and the clients Redlock refuses.
 */
import { describeLockProvider } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import { checkHistory, createHistoryWriter, createLockRecorder, readHistoryFile } from '@fencelock/history-checker';
import { topology } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GlideClusterClient } from '@valkey/valkey-glide';
import { createCluster } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedlockLockProvider } from '../src/index.js';
// The seam cases are one list for both adapters: @fencelock/redis' test file.
import { describeSeamCases } from '../../redis/test/seam-cases.js';
import { MASTER_FLAVOURS, flavourProviders } from './clients.js';
import { REDLOCK_EXPECTED_CAPABILITIES } from './expected-capabilities.js';
import { deleteOnMasters, redlockWaiters } from './helpers.js';

const { redlockUrls, redisClusterUrls, servers } = topology();
const ports = (): readonly number[] => servers.redlock.map((endpoint) => endpoint.port);
const directory = mkdtempSync(join(tmpdir(), 'fencelock-redlock-mixed-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

// Each family's first client runs the whole suite; ioredis 5's run is in conformance.test.ts.
const WHOLE_SUITE = ['node-redis 6', 'Valkey GLIDE'];
for (const flavour of MASTER_FLAVOURS.filter((candidate) => !candidate.name.startsWith('ioredis 5'))) {
  const handed = flavourProviders(flavour, () => redlockUrls);
  const register = (): void =>
    describeLockProvider({
      name: `redlock (5 shared masters) through ${flavour.name}`,
      createProvider: handed.createProvider,
      expectCapabilities: REDLOCK_EXPECTED_CAPABILITIES,
      shortTtlMs: 400,
      harness: { crashProvider: handed.crashProvider, backendWaiters: redlockWaiters(ports), deleteLock: deleteOnMasters(ports) },
    });
  if (WHOLE_SUITE.some((prefix) => flavour.name.startsWith(prefix))) register();
  else describeSeamCases(`redlock through ${flavour.name}`, register);
}

const ROUNDS = 4;

describe('one provider per client library on the same masters', () => {
  it('exclude each other on one key and hand it on to each other (checked by the history checker)', async () => {
    const path = join(directory, 'history.jsonl');
    const writer = createHistoryWriter({ path, run: 'redlock-mixed' });
    const providers: [string, LockProvider][] = await Promise.all(
      MASTER_FLAVOURS.map(async (flavour): Promise<[string, LockProvider]> => [flavour.name, await flavourProviders(flavour, () => redlockUrls).createProvider()]),
    );
    const key = `mixed:${randomUUID()}`;
    const grantedTo: string[] = [];
    try {
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
              expect((await provider.inspect(key))?.holders[0]?.ownerId).toBe(handle.ownerId);
              expect(await recorder.extend(handle)).toBe(true);
              expect(await recorder.release(handle)).toBe(true);
            }
          } finally {
            unwatch();
          }
        }),
      );
    } finally {
      writer.close();
      await Promise.all(providers.map(([, provider]) => provider.close()));
    }
    expect(new Set(grantedTo).size).toBe(MASTER_FLAVOURS.length);
    const result = checkHistory(readHistoryFile(path), { lossSignalBoundMs: 5_000 });
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({ acquisitions: MASTER_FLAVOURS.length * ROUNDS });
  }, 60_000);
});

describe('clients Redlock refuses, before any request', () => {
  it('a node-redis cluster client, and an object that is no supported client (named in the message), at compile time too', () => {
    const cluster = createCluster({ rootNodes: redisClusterUrls.map((url) => ({ url })) });
    const [second, third] = redlockUrls.slice(1, 3) as [string, string];
    // @ts-expect-error -- a cluster client is no master
    expect(() => createRedlockLockProvider({ masters: [cluster, second, third] })).toThrow(
      expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', message: expect.stringContaining('Cluster') }) as Error,
    );
    class MemcachedClient {
      get(): void {}
      on(): void {}
    }
    // @ts-expect-error -- not a supported client
    expect(() => createRedlockLockProvider({ masters: [new MemcachedClient(), second, third] })).toThrow(
      expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', message: expect.stringContaining('a MemcachedClient instance') }) as Error,
    );
  });

  it('a Valkey GLIDE cluster client', async () => {
    const cluster = await GlideClusterClient.createClient({ addresses: redisClusterUrls.map((url) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) })) });
    try {
      const [second, third] = redlockUrls.slice(1, 3) as [string, string];
      // @ts-expect-error -- a cluster client is no master
      expect(() => createRedlockLockProvider({ masters: [cluster, second, third] })).toThrow(
        expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', message: expect.stringContaining('Cluster') }) as Error,
      );
    } finally {
      cluster.close();
    }
  });
});
