import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { PythonLockPeer } from './python-lock-peer.js';

const { redisUrl } = topology();
const { hostname, port } = new URL(redisUrl);

describe('interop with other SET-NX locks on the same key name', () => {
  let python: PythonLockPeer;
  let raw: Redis;
  const open: LockProvider[] = [];
  const provider = (): LockProvider => {
    const made = createRedisLockProvider({ connection: redisUrl, defaultTtlMs: 5_000 });
    open.push(made);
    return made;
  };
  beforeAll(async () => {
    python = await PythonLockPeer.start(hostname, Number(port));
    raw = new Redis(redisUrl);
  });
  afterAll(async () => {
    await python?.stop();
    raw?.disconnect();
  });
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
  });
  const key = (label: string): string => `interop:${label}:${randomUUID()}`;

  it("redis-py's Lock holds: we cannot acquire, inspect shows its token as a foreign owner; after its release we get it", async () => {
    const locks = provider();
    const name = key('python-holds');
    const held = await python.acquire(name, 10_000);
    expect(held.ok).toBe(true);
    expect(await locks.tryAcquire(name)).toBeUndefined();
    const holder = (await locks.inspect(name))?.holders[0];
    expect(holder).toMatchObject({ ownerId: held.token, fencingToken: undefined, metadata: undefined });
    expect(holder?.remainingMs).toBeGreaterThan(0);
    expect(holder?.remainingMs).toBeLessThanOrEqual(10_000);
    // A waiter polls for foreign releases (redis-py publishes nothing).
    const waiting = locks.acquire(name, { waitMs: 10_000 });
    await python.release(name);
    const lock = await waiting;
    expect(lock.isHeld()).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it("we hold: redis-py's lock.acquire(blocking=False) is False; after our release it is True", async () => {
    const locks = provider();
    const name = key('we-hold');
    const lock = await locks.acquire(name);
    expect((await python.acquire(name, 10_000)).ok).toBe(false);
    expect(await lock.release()).toBe(true);
    expect((await python.acquire(name, 10_000)).ok).toBe(true);
    // Our release never deletes the foreign holder's key.
    expect(await lock.release()).toBe(false);
    expect(await locks.tryAcquire(name)).toBeUndefined();
    await python.release(name);
  });

  it('a hand-written SET NX PX excludes us and is excluded by us', async () => {
    const locks = provider();
    const name = key('raw');
    expect(await raw.set(name, 'hand-written', 'PX', 10_000, 'NX')).toBe('OK');
    expect(await locks.tryAcquire(name)).toBeUndefined();
    expect((await locks.inspect(name))?.holders[0]).toMatchObject({ ownerId: 'hand-written', fencingToken: undefined });
    expect(await raw.del(name)).toBe(1);
    const lock = await locks.acquire(name);
    expect(await raw.set(name, 'hand-written', 'PX', 10_000, 'NX')).toBeNull();
    expect(await raw.get(name)).toBe(lock.ownerId);
    expect(await lock.release()).toBe(true);
    expect(await raw.exists(name)).toBe(0);
  });

  it('the lock lives at exactly keyPrefix + key, holding the owner id', async () => {
    const locks = createRedisLockProvider({ connection: redisUrl, keyPrefix: 'app:' });
    open.push(locks);
    const name = key('prefixed');
    const lock = await locks.acquire(name);
    expect(await raw.get(`app:${name}`)).toBe(lock.ownerId);
    expect(await raw.exists(name)).toBe(0);
    expect((await python.acquire(`app:${name}`, 10_000)).ok).toBe(false);
    await lock.release();
  });
});
