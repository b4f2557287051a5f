// L3's scan finds a lock, a semaphore permit or a leadership that is still held, and nothing once it is let go.
import type { LockProvider } from '@fencelock/core';
import { type RedisServer, startRedisServer } from '@fencelock/test-infra';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scanLeftovers } from '../src/backends.js';
import { type ClientBackendConfig, createChaosProvider } from '../src/chaos-provider.js';

let redis: RedisServer | undefined;
beforeAll(async () => {
  redis = await startRedisServer();
}, 30_000);
afterAll(async () => {
  await redis?.stop();
});

/** Runs `body` with a provider and the scan's config, on a key prefix of its own. */
async function withProvider(keyPrefix: string, body: (provider: LockProvider, config: ClientBackendConfig) => Promise<void>): Promise<void> {
  if (redis === undefined) throw new Error('redis did not start');
  const config: ClientBackendConfig = { backend: 'redis', ports: [redis.port], ttlMs: 2_000, keyPrefix };
  const provider = await createChaosProvider(config);
  try {
    await body(provider, config);
  } finally {
    await provider.close();
  }
}

it('scanLeftovers reports a held key of the run and nothing after its release', () =>
  withProvider('chaos-leftover-test/', async (provider, config) => {
    const handle = await provider.acquire('k0', { ttlMs: 2_000 });
    const held = await scanLeftovers(config, { locks: ['k0', 'k1'] });
    expect(held).toHaveLength(1);
    expect(held[0]).toContain('chaos-leftover-test/k0');
    await handle.release();
    expect(await scanLeftovers(config, { locks: ['k0', 'k1'] })).toEqual([]);
  }));

it('scanLeftovers reports a held semaphore permit among the semaphore keys, apart from the lock keys of the same names', () =>
  withProvider('chaos-leftover-sem-test/', async (provider, config) => {
    const permit = await provider.acquireSemaphore('k0', { limit: 2, ttlMs: 2_000 });
    // The lock k0 is free: only the semaphore scan sees the permit.
    expect(await scanLeftovers(config, { locks: ['k0'] })).toEqual([]);
    expect(await scanLeftovers(config, { semaphores: ['k0', 'k1'] })).toEqual([`semaphore chaos-leftover-sem-test/k0 (${permit.ownerId})`]);
    await permit.release();
    expect(await scanLeftovers(config, { semaphores: ['k0', 'k1'] })).toEqual([]);
  }));

it('scanLeftovers reports a leader among the election names, apart from the lock keys of the same names', () =>
  withProvider('chaos-leftover-elect-test/', async (provider, config) => {
    const leader = await provider.campaign('k0', { value: 'c1', ttlMs: 2_000 });
    expect(await scanLeftovers(config, { locks: ['k0'] })).toEqual([]);
    expect(await scanLeftovers(config, { elections: ['k0', 'k1'] })).toEqual(['election chaos-leftover-elect-test/k0 (led by "c1")']);
    await leader.resign();
    expect(await scanLeftovers(config, { elections: ['k0', 'k1'] })).toEqual([]);
  }));
