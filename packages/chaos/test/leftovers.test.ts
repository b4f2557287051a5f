// L3's scan finds a key that is still held, and nothing once it is released.
import { startRedisServer } from '@fencelock/test-infra';
import { expect, it } from 'vitest';
import { createChaosProvider, scanLeftovers } from '../src/backends.js';

it('scanLeftovers reports a held key of the run and nothing after its release', async () => {
  const redis = await startRedisServer();
  const config = { backend: 'redis', ports: [redis.port], ttlMs: 2_000, keyPrefix: 'chaos-leftover-test/' } as const;
  const provider = createChaosProvider(config);
  try {
    const handle = await provider.acquire('k0', { ttlMs: 2_000 });
    const held = await scanLeftovers(config, { locks: ['k0', 'k1'] });
    expect(held).toHaveLength(1);
    expect(held[0]).toContain('chaos-leftover-test/k0');
    await handle.release();
    expect(await scanLeftovers(config, { locks: ['k0', 'k1'] })).toEqual([]);
  } finally {
    await provider.close();
    await redis.stop();
  }
});

it('scanLeftovers reports a held semaphore permit among the semaphore keys, apart from the lock keys of the same names', async () => {
  const redis = await startRedisServer();
  const config = { backend: 'redis', ports: [redis.port], ttlMs: 2_000, keyPrefix: 'chaos-leftover-sem-test/' } as const;
  const provider = createChaosProvider(config);
  try {
    const permit = await provider.acquireSemaphore('k0', { limit: 2, ttlMs: 2_000 });
    // The lock k0 is free: only the semaphore scan sees the permit.
    expect(await scanLeftovers(config, { locks: ['k0'] })).toEqual([]);
    const held = await scanLeftovers(config, { semaphores: ['k0', 'k1'] });
    expect(held).toEqual([`semaphore chaos-leftover-sem-test/k0 (${permit.ownerId})`]);
    await permit.release();
    expect(await scanLeftovers(config, { semaphores: ['k0', 'k1'] })).toEqual([]);
  } finally {
    await provider.close();
    await redis.stop();
  }
});

it('scanLeftovers reports a leader among the election names, apart from the lock keys of the same names', async () => {
  const redis = await startRedisServer();
  const config = { backend: 'redis', ports: [redis.port], ttlMs: 2_000, keyPrefix: 'chaos-leftover-elect-test/' } as const;
  const provider = createChaosProvider(config);
  try {
    const leader = await provider.campaign('k0', { value: 'c1', ttlMs: 2_000 });
    expect(await scanLeftovers(config, { locks: ['k0'] })).toEqual([]);
    expect(await scanLeftovers(config, { elections: ['k0', 'k1'] })).toEqual(['election chaos-leftover-elect-test/k0 (led by "c1")']);
    await leader.resign();
    expect(await scanLeftovers(config, { elections: ['k0', 'k1'] })).toEqual([]);
  } finally {
    await provider.close();
    await redis.stop();
  }
});
