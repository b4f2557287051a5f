import type { LockProvider } from '@fencelock/core';
import { abortedWithin, nextEvent } from '@fencelock/conformance';
import { redisCommand, startTcpProxy, topology } from '@fencelock/test-infra';
import { hashSlot, switchesReplicationBeforeWrites } from '@fencelock/redis-shared';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';
import { redisSemaphoreKeys } from '../src/semaphore-keys.js';
import { semaphoreAcquireScript, semaphoreExtendScript, semaphoreInspectScript, semaphoreReleaseScript } from '../src/semaphore-scripts.js';

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

  it('a key of another type at its holders set (WRONGTYPE): fails at once with LOCK_KEY_CONFLICT and leaves the value as it was', async () => {
    const semaphores = provider();
    const name = key('wrongtype');
    const { holders } = redisSemaphoreKeys('', name);
    await raw.rpush(holders, 'app-data');
    // An unbounded wait: an acquire that retried the conflict would never settle.
    await expect(semaphores.acquireSemaphore(name, { limit: 2, waitMs: Number.POSITIVE_INFINITY })).rejects.toMatchObject({ code: 'LOCK_KEY_CONFLICT', key: name });
    expect(await raw.lrange(holders, 0, -1)).toEqual(['app-data']);
    await raw.del(holders);
    const permit = await semaphores.acquireSemaphore(name, { limit: 2 });
    await permit.release();
  });
});

// As a lock's handle does (see faults.test.ts): a dropped link makes the permits uncertain, and the
// reconnect either finds them still held (recovered) or gone (lost).
describe('semaphore permits across a connection reset', () => {
  it('turn uncertain on a reset link; after reconnecting they recover (still held) or are lost (deleted meanwhile)', async () => {
    const { port } = new URL(redisUrl);
    const proxy = await startTcpProxy({ targetPort: Number(port) });
    const through = createRedisLockProvider({ connection: `redis://127.0.0.1:${proxy.port}`, defaultTtlMs: 10_000, requestTimeoutMs: 500 });
    try {
      const kept = await through.acquireSemaphore(`semaphore:reset-kept:${randomUUID()}`, { limit: 2 });
      const takenName = `semaphore:reset-taken:${randomUUID()}`;
      const taken = await through.acquireSemaphore(takenName, { limit: 2 });
      const uncertain = nextEvent(through, 'uncertain', (e) => e.ownerId === kept.ownerId, 5_000);
      const recovered = nextEvent(through, 'recovered', (e) => e.ownerId === kept.ownerId, 10_000);
      proxy.setMode('reset');
      await uncertain;
      expect(kept.state).toBe('uncertain');
      // While this client is cut off, the second holder's permits are deleted behind its back.
      const takenKeys = redisSemaphoreKeys('', takenName);
      expect(await redisCommand(Number(port), ['DEL', takenKeys.holders, takenKeys.info])).toBe(2);
      proxy.setMode('pass');
      await recovered;
      expect(kept.state).toBe('held');
      expect(await abortedWithin(taken.signal, 10_000, 'the loss found at reconnect')).toMatchObject({ code: 'LOCK_LOST' });
      expect(await kept.release()).toBe(true);
    } finally {
      await through.close();
      await proxy.close();
    }
  }, 30_000);

});

describe('semaphore scripts on Redis 3.2-4.x', () => {
  it('each asks for effects replication before its first write, as they read TIME', () => {
    for (const script of [semaphoreAcquireScript, semaphoreExtendScript, semaphoreReleaseScript, semaphoreInspectScript]) {
      expect(switchesReplicationBeforeWrites(script.lua), script.name).toBe(true);
    }
  });
});
