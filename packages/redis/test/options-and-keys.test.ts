import { isLockError } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { hashSlot, type IoredisFamilyClient } from '@fencelock/redis-shared';
import { RESERVED_KEY_PATTERN, createRedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';

const { redisUrl } = topology();

/**
 * An ioredis client built by a second, separately loaded copy of the package (as a user's tree with
 * two ioredis versions has): its classes are not this package's.
 */
function secondCopyOfIoredisClient(url: string): { disconnect(): void } {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('ioredis');
  const root = entry.slice(0, entry.lastIndexOf('/built/') + 1);
  const cached = Object.keys(require.cache).filter((path) => path.startsWith(root));
  const saved = new Map(cached.map((path) => [path, require.cache[path]]));
  for (const path of cached) delete require.cache[path];
  try {
    const copy = require('ioredis') as { Redis: new (url: string) => { disconnect(): void } };
    return new copy.Redis(url);
  } finally {
    for (const path of Object.keys(require.cache)) if (path.startsWith(root)) delete require.cache[path];
    for (const [path, module] of saved) require.cache[path] = module;
  }
}

describe('options are checked before any connection is opened', () => {
  const bad: [string, unknown, 'TypeError' | 'RangeError'][] = [
    ['no source', {}, 'TypeError'],
    ['two sources', { connection: redisUrl, clusterNodes: [{ host: '127.0.0.1', port: 7101 }] }, 'TypeError'],
    ['not a supported client', { client: {} }, 'TypeError'],
    ['connection of the wrong type', { connection: 42 }, 'TypeError'],
    ["ioredis' own keyPrefix", { connection: { keyPrefix: 'x:' } }, 'TypeError'],
    ["ioredis' own keyPrefix in clusterOptions", { clusterNodes: [7101], clusterOptions: { keyPrefix: 'x:' } }, 'TypeError'],
    ["ioredis' own keyPrefix in clusterOptions.redisOptions", { clusterNodes: [7101], clusterOptions: { redisOptions: { keyPrefix: 'x:' } } }, 'TypeError'],
    ['empty clusterNodes', { clusterNodes: [] }, 'TypeError'],
    ['clusterOptions without clusterNodes', { connection: redisUrl, clusterOptions: {} }, 'TypeError'],
    ['keyPrefix not a string', { connection: redisUrl, keyPrefix: 1 }, 'TypeError'],
    ['reserved keyPrefix', { connection: redisUrl, keyPrefix: '{0}fencelock:' }, 'RangeError'],
    ['empty channel', { connection: redisUrl, channel: '' }, 'TypeError'],
    ['requestTimeoutMs 0', { connection: redisUrl, requestTimeoutMs: 0 }, 'RangeError'],
    ['requestTimeoutMs NaN', { connection: redisUrl, requestTimeoutMs: Number.NaN }, 'RangeError'],
    ['requestTimeoutMs a string', { connection: redisUrl, requestTimeoutMs: '100' }, 'TypeError'],
    ['requestTimeoutMs above a third of the default TTL (30 s)', { connection: redisUrl, requestTimeoutMs: 10_001 }, 'RangeError'],
    ['requestTimeoutMs above a third of defaultTtlMs', { connection: redisUrl, defaultTtlMs: 1_500, requestTimeoutMs: 501 }, 'RangeError'],
    ['an unknown option', { connection: redisUrl, requestTimeout: 100 }, 'TypeError'],
    ['clockDriftFactor 0.5', { connection: redisUrl, clockDriftFactor: 0.5 }, 'RangeError'],
    ['retry.factor below 1', { connection: redisUrl, retry: { factor: 0.5 } }, 'RangeError'],
    ['retry.maxDelayMs below initialDelayMs', { connection: redisUrl, retry: { initialDelayMs: 100, maxDelayMs: 10 } }, 'RangeError'],
    ['defaultTtlMs below minTtlMs', { connection: redisUrl, defaultTtlMs: 99 }, 'RangeError'],
    ['defaultWaitMs negative', { connection: redisUrl, defaultWaitMs: -1 }, 'RangeError'],
    ['fenceCounterTtlMs 0', { connection: redisUrl, fenceCounterTtlMs: 0 }, 'RangeError'],
    ['fenceCounterTtlMs NaN', { connection: redisUrl, fenceCounterTtlMs: Number.NaN }, 'RangeError'],
    ['fenceCounterTtlMs below 1 s', { connection: redisUrl, fenceCounterTtlMs: 999 }, 'RangeError'],
    ['fenceCounterTtlMs above the longest duration', { connection: redisUrl, fenceCounterTtlMs: 2 ** 31 }, 'RangeError'],
    ['fenceCounterTtlMs a string', { connection: redisUrl, fenceCounterTtlMs: '1000' }, 'TypeError'],
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

  it('refuses the former commandTimeoutMs as an unknown option, naming requestTimeoutMs', () => {
    expect(() => createRedisLockProvider({ connection: redisUrl, commandTimeoutMs: 500 } as RedisLockProviderOptions)).toThrow(
      expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', name: 'LockTypeError', message: expect.stringContaining('requestTimeoutMs') as string }),
    );
  });

  it('derives the default request timeout from a short defaultTtlMs (a third of it), so such a provider is accepted and works', async () => {
    const provider = createRedisLockProvider({ connection: redisUrl, defaultTtlMs: 300 });
    try {
      const lock = await provider.acquire(`options:short-ttl:${Math.random()}`);
      expect(await lock.release()).toBe(true);
    } finally {
      await provider.close();
    }
  });

  it('refuses an unsupported client at compile time and, before any request, at run time, naming what was passed', () => {
    // Another library's client (shaped like @valkey/valkey-glide's, which is not supported yet).
    class GlideClient {
      customCommand(): Promise<unknown> {
        return Promise.resolve(undefined);
      }
      close(): void {}
    }
    const attempts: (() => unknown)[] = [
      // @ts-expect-error -- not a supported client
      () => createRedisLockProvider({ client: new GlideClient() }),
      // @ts-expect-error -- not a supported client
      () => createRedisLockProvider({ client: {} }),
      // @ts-expect-error -- a URL goes in options.connection
      () => createRedisLockProvider({ client: redisUrl }),
    ];
    const messages = attempts.map((attempt) => {
      try {
        attempt();
      } catch (error) {
        expect(error).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT', argument: 'options.client' });
        return (error as Error).message;
      }
      throw new Error('accepted');
    });
    expect(messages[0]).toContain('got a GlideClient instance');
    expect(messages[1]).toContain('got a plain object');
    expect(messages[2]).toContain('got a string');
    expect(messages[0]).toMatch(/ioredis 5 or 6.*iovalkey.*node-redis 5 or 6/);
  });

  it('takes a client from a second copy of ioredis (checked by shape, not instanceof)', async () => {
    const client = secondCopyOfIoredisClient(redisUrl);
    try {
      expect(client instanceof Redis).toBe(false);
      const provider = createRedisLockProvider({ client: client as unknown as Redis });
      const lock = await provider.acquire(`options:second-copy:${Math.random()}`);
      expect(lock.fencingToken).toBeTypeOf('bigint');
      expect(await lock.release()).toBe(true);
      await provider.close();
    } finally {
      client.disconnect();
    }
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
    expect((provider.client as IoredisFamilyClient).status).toBe('end');
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
