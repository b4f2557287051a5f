import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { hashSlot } from '@fencelock/redis-shared';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';
import { redisSemaphoreKeys } from '../src/semaphore-keys.js';

const { redisUrl } = topology();

// What the semaphore scripts leave on the server; the contract itself is the conformance suite's.
describe('semaphore keys on Redis', () => {
  let raw: Redis;
  const open: LockProvider[] = [];
  const provider = (): LockProvider => {
    const made = createRedisLockProvider({ connection: redisUrl, defaultTtlMs: 10_000 });
    open.push(made);
    return made;
  };
  beforeAll(() => {
    raw = new Redis(redisUrl);
  });
  afterAll(() => {
    raw?.disconnect();
  });
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
  });
  const key = (label: string): string => `semaphore:${label}:${randomUUID()}`;

  it('keeps its keys in the name\'s slot, apart from the lock of the same name', () => {
    const name = key('slots');
    const keys = redisSemaphoreKeys('', name);
    const lock = redisLockKeys('', name);
    for (const side of [keys.holders, keys.info, keys.fence]) {
      expect(hashSlot(side)).toBe(hashSlot(name));
      expect([lock.lock, lock.fence, lock.meta, lock.waiters, lock.reserved]).not.toContain(side);
    }
    expect(() => redisSemaphoreKeys('', '{abc}fencelock:fence:x')).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
  });

  it('stores each holder with its permits and expiry, and removes the holders and info keys with the last holder', async () => {
    const locks = provider();
    const name = key('layout');
    const keys = redisSemaphoreKeys('', name);
    const two = await locks.acquireSemaphore(name, { limit: 3, permits: 2, ttlMs: 5_000, metadata: 'batch 7' });
    const members = await raw.zrange(keys.holders, 0, -1, 'WITHSCORES');
    expect(members[0]).toBe(`2|${two.ownerId}`);
    const [seconds, micros] = await raw.time();
    const expiresIn = Number(members[1]) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    expect(expiresIn).toBeGreaterThan(0);
    expect(expiresIn).toBeLessThanOrEqual(5_000);
    expect(await raw.hget(keys.info, two.ownerId)).toBe(`3 ${two.fencingToken!.toString()} batch 7`);
    expect(await raw.pttl(keys.holders)).toBeGreaterThan(0);
    const info = await locks.inspectSemaphore(name);
    expect(info).toMatchObject({ key: name, limit: 3, holders: [{ ownerId: two.ownerId, permits: 2, fencingToken: two.fencingToken, metadata: 'batch 7' }] });
    expect(await two.release()).toBe(true);
    expect(await raw.exists(keys.holders, keys.info)).toBe(0);
    // The counter stays (tokens must keep increasing), with the lock's counter lifetime.
    expect(await raw.get(keys.fence)).toBe(two.fencingToken!.toString());
    expect(await raw.pttl(keys.fence)).toBeGreaterThan(0);
  });

  it('keeps tokens increasing when the counter was lost', async () => {
    const locks = provider();
    const name = key('counter-lost');
    const first = await locks.acquireSemaphore(name, { limit: 1 });
    await first.release();
    await raw.del(redisSemaphoreKeys('', name).fence);
    const second = await locks.acquireSemaphore(name, { limit: 1 });
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await second.release();
  });
});
