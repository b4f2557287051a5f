/**
 * Redis under memory pressure, on a dedicated server: which `maxmemory-policy` keeps a held lock.
 * Lock keys carry a TTL, so a `volatile-*` policy evicts exactly them (and an `allkeys-*` policy may
 * evict them or the fence counter); only `noeviction` keeps them, refusing writes instead. The
 * volatile case is the negative control of docs/SAFETY.md ("Configurations that void the guarantees").
 */
import { isLockError, type LockEventMap } from '@fencelock/core';
import { EVICTION_POLICY_WARNING } from '@fencelock/redis-shared';
import { redisCommand, startRedisServer, type RedisServer } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { GlideClient } from '@valkey/valkey-glide';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer({ persistence: false });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const MAXMEMORY = 8 * 1024 * 1024;
const VALUE = 'x'.repeat(64 * 1024);

/** Fills the server with non-expiring values until it is over `maxmemory` or refuses a write (OOM). */
async function fillPastMaxmemory(prefix: string): Promise<'evicting' | 'refused'> {
  // Bounded: 2 × maxmemory worth of values at most.
  for (let index = 0; index < (2 * MAXMEMORY) / VALUE.length; index += 1) {
    let refused = false;
    try {
      await redisCommand(server.port, ['SET', `${prefix}:${index}`, VALUE]);
    } catch (error) {
      if (!String(error).includes('OOM')) throw error;
      refused = true;
    }
    // A write past maxmemory evicts what the policy allows first, and is refused if that is not enough.
    const info = String(await redisCommand(server.port, ['INFO', 'stats']));
    if (/evicted_keys:[1-9]/.test(info)) return 'evicting';
    if (refused) return 'refused';
  }
  throw new Error('the server neither evicted nor refused a write past maxmemory');
}

async function configure(policy: string): Promise<void> {
  await redisCommand(server.port, ['FLUSHALL']);
  await redisCommand(server.port, ['CONFIG', 'RESETSTAT']);
  await redisCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', policy]);
  await redisCommand(server.port, ['CONFIG', 'SET', 'maxmemory', String(MAXMEMORY)]);
}

describe('maxmemory-policy', () => {
  it('volatile-lru (negative control): the held lock is evicted and a second client is granted it while the first still believes it holds', async () => {
    await configure('volatile-lru');
    const [a, b] = [createRedisLockProvider({ connection: server.url }), createRedisLockProvider({ connection: server.url })];
    try {
      const key = `evicted:${randomUUID()}`;
      const first = await a.acquire(key, { ttlMs: 30_000 });
      expect(await fillPastMaxmemory('filler')).toBe('evicting');
      // The only keys with a TTL were the lock and its metadata: they went first.
      expect(await redisCommand(server.port, ['EXISTS', key])).toBe(0);
      // The pressure passes (here: the limit is lifted), so the next client's writes fit again.
      await redisCommand(server.port, ['CONFIG', 'SET', 'maxmemory', '0']);
      const second = await b.tryAcquire(key, { ttlMs: 30_000 });
      expect(second?.isHeld()).toBe(true);
      // Two holders: the first finds out at its next extension, a third of its TTL later.
      expect(first.isHeld()).toBe(true);
      await Promise.all([first.release(), second?.release()]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('noeviction: the writes that would need memory are refused, and the held lock stays', async () => {
    await configure('noeviction');
    const [a, b] = [createRedisLockProvider({ connection: server.url }), createRedisLockProvider({ connection: server.url })];
    try {
      const key = `kept:${randomUUID()}`;
      const first = await a.acquire(key, { ttlMs: 30_000 });
      expect(await fillPastMaxmemory('filler')).toBe('refused');
      expect(await redisCommand(server.port, ['EXISTS', key])).toBe(1);
      // A second acquire is refused too: the key is held (or, as a write, refused for memory).
      const second = await b.tryAcquire(key, { ttlMs: 30_000 }).catch((error: unknown) => {
        expect(isLockError(error)).toBe(true);
        return undefined;
      });
      expect(second).toBeUndefined();
      expect(first.isHeld()).toBe(true);
      expect(await first.release()).toBe(true);
    } finally {
      await redisCommand(server.port, ['FLUSHALL']);
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('the eviction-policy warning', () => {
  it('is emitted once, at connect, when the policy is not noeviction; checkBackend answers it', async () => {
    await configure('volatile-lru');
    const provider = createRedisLockProvider({ connection: server.url });
    try {
      const warnings: LockEventMap['backend-warning'][] = [];
      provider.on('backend-warning', (event) => warnings.push(event));
      const found = await provider.checkBackend?.();
      expect(found).toHaveLength(1);
      expect(found?.[0]?.code).toBe(EVICTION_POLICY_WARNING);
      expect(found?.[0]?.message).toContain('"volatile-lru"');
      expect(found?.[0]?.message).toContain(`127.0.0.1:${server.port}`);
      // The check ran once, when the provider was created: the event came once, before any lock.
      expect(warnings.map((event) => [event.provider, event.code])).toEqual([['redis', EVICTION_POLICY_WARNING]]);
      const lock = await provider.acquire(`warned:${randomUUID()}`);
      await lock.release();
      expect(warnings).toHaveLength(1);
    } finally {
      await provider.close();
    }
  });

  it('is not emitted under noeviction', async () => {
    await configure('noeviction');
    const provider = createRedisLockProvider({ connection: server.url });
    try {
      const warnings: unknown[] = [];
      provider.on('backend-warning', (event) => warnings.push(event));
      expect(await provider.checkBackend?.()).toEqual([]);
      expect(warnings).toEqual([]);
    } finally {
      await provider.close();
    }
  });

  it('is not emitted, and nothing fails, when the server refuses CONFIG (a managed server)', async () => {
    await configure('volatile-lru');
    // An ACL user that may lock but not read the configuration.
    await redisCommand(server.port, ['ACL', 'SETUSER', 'locker', 'on', 'nopass', '~*', '&*', '+@all', '-config']);
    const provider = createRedisLockProvider({ connection: { host: '127.0.0.1', port: server.port, username: 'locker' } });
    try {
      expect(await provider.checkBackend?.()).toEqual([]);
      const lock = await provider.acquire(`refused:${randomUUID()}`);
      expect(await lock.release()).toBe(true);
    } finally {
      await provider.close();
      await redisCommand(server.port, ['ACL', 'DELUSER', 'locker']);
    }
  });

  it('is read through a Valkey GLIDE client too (its RESP3 map reply), and a refused CONFIG is no failure there either', async () => {
    await configure('volatile-lru');
    await redisCommand(server.port, ['ACL', 'SETUSER', 'locker', 'on', 'nopass', '~*', '&*', '+@all', '-config']);
    const address = { host: '127.0.0.1', port: server.port };
    const warned = await GlideClient.createClient({ addresses: [address] });
    const refused = await GlideClient.createClient({ addresses: [address], credentials: { username: 'locker', password: 'nopass-user' } });
    const [through, locker] = [createRedisLockProvider({ client: warned }), createRedisLockProvider({ client: refused })];
    try {
      const found = await through.checkBackend?.();
      expect(found?.map((warning) => warning.code)).toEqual([EVICTION_POLICY_WARNING]);
      expect(found?.[0]?.message).toContain('"volatile-lru"');
      expect(await locker.checkBackend?.()).toEqual([]);
    } finally {
      await Promise.all([through.close(), locker.close()]);
      warned.close();
      refused.close();
      await redisCommand(server.port, ['ACL', 'DELUSER', 'locker']);
    }
  });
});
