import { isLockError } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { hashSlot } from '@fencelock/redis-shared';
import { RESERVED_KEY_PATTERN, createRedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';

const { redisUrl } = topology();

describe('options are checked before any connection is opened', () => {
  const bad: [string, unknown, 'TypeError' | 'RangeError'][] = [
    ['no source', {}, 'TypeError'],
    ['two sources', { connection: redisUrl, clusterNodes: [{ host: '127.0.0.1', port: 7101 }] }, 'TypeError'],
    ['not an ioredis client', { client: {} }, 'TypeError'],
    ['connection of the wrong type', { connection: 42 }, 'TypeError'],
    ["ioredis' own keyPrefix", { connection: { keyPrefix: 'x:' } }, 'TypeError'],
    ['empty clusterNodes', { clusterNodes: [] }, 'TypeError'],
    ['clusterOptions without clusterNodes', { connection: redisUrl, clusterOptions: {} }, 'TypeError'],
    ['keyPrefix not a string', { connection: redisUrl, keyPrefix: 1 }, 'TypeError'],
    ['reserved keyPrefix', { connection: redisUrl, keyPrefix: '{0}fencelock:' }, 'RangeError'],
    ['empty channel', { connection: redisUrl, channel: '' }, 'TypeError'],
    ['commandTimeoutMs 0', { connection: redisUrl, commandTimeoutMs: 0 }, 'RangeError'],
    ['commandTimeoutMs NaN', { connection: redisUrl, commandTimeoutMs: Number.NaN }, 'RangeError'],
    ['commandTimeoutMs a string', { connection: redisUrl, commandTimeoutMs: '100' }, 'TypeError'],
    ['clockDriftFactor 0.5', { connection: redisUrl, clockDriftFactor: 0.5 }, 'RangeError'],
    ['retry.factor below 1', { connection: redisUrl, retry: { factor: 0.5 } }, 'RangeError'],
    ['retry.maxDelayMs below initialDelayMs', { connection: redisUrl, retry: { initialDelayMs: 100, maxDelayMs: 10 } }, 'RangeError'],
    ['defaultTtlMs below minTtlMs', { connection: redisUrl, defaultTtlMs: 99 }, 'RangeError'],
    ['defaultWaitMs negative', { connection: redisUrl, defaultWaitMs: -1 }, 'RangeError'],
  ];
  it.each(bad)('refuses %s', (_label, options, kind) => {
    let error: unknown;
    try {
      createRedisLockProvider(options as RedisLockProviderOptions);
    } catch (thrown) {
      error = thrown;
    }
    expect(isLockError(error, 'LOCK_INVALID_ARGUMENT')).toBe(true);
    expect((error as Error).name).toBe(kind === 'TypeError' ? 'LockTypeError' : 'LockRangeError');
  });

  it('refuses a client with ioredis keyPrefix, and never closes a client it was handed', async () => {
    const prefixed = new Redis(redisUrl, { keyPrefix: 'x:', lazyConnect: true });
    expect(() => createRedisLockProvider({ client: prefixed })).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    prefixed.disconnect();
    const client = new Redis(redisUrl);
    try {
      const provider = createRedisLockProvider({ client });
      const lock = await provider.acquire(`options:handed:${Math.random()}`);
      await provider.close();
      expect(lock.isHeld()).toBe(false);
      expect(client.status).toBe('ready');
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });

  it('closes the connection it opened', async () => {
    const provider = createRedisLockProvider({ connection: redisUrl });
    await provider.acquire(`options:owned:${Math.random()}`).then((lock) => lock.release());
    await provider.close();
    expect(provider.client.status).toBe('end');
  });
});

describe('key layout', () => {
  it('puts the lock at keyPrefix + key and side keys in its slot, injectively', () => {
    const odd = ['.', '..', '/', 'a/b', 'a%2Fb', 'a\u0000b', 'é', 'e\u0301', '__proto__', '🔒', 'a{b}c', '{}x', '}{'];
    const seen = new Set<string>();
    for (const key of odd) {
      const keys = redisLockKeys('p:', key);
      expect(keys.lock).toBe(`p:${key}`);
      expect(hashSlot(keys.fence)).toBe(hashSlot(keys.lock));
      expect(hashSlot(keys.meta)).toBe(hashSlot(keys.lock));
      for (const name of [keys.lock, keys.fence, keys.meta]) {
        expect(seen.has(name), name).toBe(false);
        seen.add(name);
      }
    }
  });

  it('refuses lock keys shaped like side keys, so no lock can collide with a fence counter', async () => {
    const fence = redisLockKeys('', 'orders:42').fence;
    expect(RESERVED_KEY_PATTERN.test(fence)).toBe(true);
    expect(() => redisLockKeys('', fence)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    const provider = createRedisLockProvider({ connection: redisUrl });
    try {
      await expect(provider.tryAcquire(fence)).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
      await expect(provider.inspect(fence)).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    } finally {
      await provider.close();
    }
  });
});
