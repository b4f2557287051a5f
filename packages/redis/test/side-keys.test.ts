import type { LockProvider } from '@fencelock/core';
import { topology, waitFor } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FENCE_COUNTER_TTL_MS, createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';

const { redisUrl } = topology();

// The fence counter and the metadata string are side keys the acquire script writes; these cases
// put them in states a plain run never reaches.
describe('side keys: the fence counter and the metadata string', () => {
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
  const key = (label: string): string => `side-keys:${label}:${randomUUID()}`;

  it('increments the counter as a decimal string, carrying through trailing nines past 2^63', async () => {
    const locks = provider();
    const cases: [string, bigint][] = [
      ['2999999999999999999', 3000000000000000000n],
      ['9'.repeat(20), 10n ** 20n],
      ['1234567899999999999999', 1234567900000000000000n],
      ['98765432100000000000001', 98765432100000000000002n],
    ];
    for (const [counter, expected] of cases) {
      const name = key('carry');
      await raw.set(redisLockKeys('', name).fence, counter);
      const first = await locks.acquire(name);
      expect(first.fencingToken).toBe(expected);
      await first.release();
      const second = await locks.acquire(name);
      expect(second.fencingToken).toBe(expected + 1n);
      expect(await raw.get(redisLockKeys('', name).fence)).toBe(String(expected + 1n));
      await second.release();
    }
  });

  it('replaces a counter that is not a decimal string by the clock floor, and counts up from there', async () => {
    const locks = provider();
    for (const junk of ['not a number', `9999999999999999999999x`, '0099999999999999999999', '-99999999999999999999']) {
      const name = key('junk');
      await raw.set(redisLockKeys('', name).fence, junk);
      const before = BigInt(Date.now());
      const first = await locks.acquire(name);
      const after = BigInt(Date.now());
      // The floor is the server clock in µs × 1000; server and test share this machine's clock.
      const floorMs = first.fencingToken! / 1_000_000n;
      expect(floorMs >= before - 1_000n && floorMs <= after + 1_000n, `floor from ${junk}`).toBe(true);
      await first.release();
      const second = await locks.acquire(name);
      expect(second.fencingToken! > first.fencingToken!).toBe(true);
      expect(await raw.get(redisLockKeys('', name).fence)).toBe(String(second.fencingToken));
      await second.release();
    }
  });

  it('the counter expires the configured lifetime after the last acquisition (7 days by default; never with Infinity)', async () => {
    const name = key('lifetime');
    const fence = redisLockKeys('', name).fence;
    const lock = await provider().acquire(name);
    const pttl = await raw.pttl(fence);
    expect(pttl).toBeGreaterThan(DEFAULT_FENCE_COUNTER_TTL_MS - 60_000);
    expect(pttl).toBeLessThanOrEqual(DEFAULT_FENCE_COUNTER_TTL_MS);
    await lock.release();
    const forever = createRedisLockProvider({ connection: redisUrl, fenceCounterTtlMs: Infinity });
    open.push(forever);
    await (await forever.acquire(name)).release();
    expect(await raw.pttl(fence)).toBe(-1);
  });

  it('after the counter expired, the next token is still larger than every token before it', async () => {
    const name = key('expired');
    const fence = redisLockKeys('', name).fence;
    const shortLived = createRedisLockProvider({ connection: redisUrl, fenceCounterTtlMs: 1_000 });
    open.push(shortLived);
    const tokens: bigint[] = [];
    for (let i = 0; i < 3; i += 1) {
      const lock = await shortLived.acquire(name);
      tokens.push(lock.fencingToken!);
      await lock.release();
    }
    expect(await raw.pttl(fence)).toBeGreaterThan(0);
    await waitFor(async () => ((await raw.exists(fence)) === 0 ? true : undefined), { timeoutMs: 10_000, what: 'the fence counter to expire' });
    const after = await shortLived.acquire(name);
    expect(after.fencingToken! > tokens.at(-1)!).toBe(true);
    expect(await raw.get(fence)).toBe(String(after.fencingToken));
    await after.release();
  });

  it('inspect returns metadata byte-exact: spaces, newlines, digits, non-ASCII, empty, and absent', async () => {
    const locks = provider();
    for (const metadata of ['a b  c ', 'line one\nline two', '12 34 owner', 'ключ 🔒 ü', '', undefined]) {
      const name = key('meta');
      const lock = await locks.acquire(name, metadata === undefined ? {} : { metadata });
      const holder = (await locks.inspect(name))?.holders[0];
      expect(holder).toMatchObject({ ownerId: lock.ownerId, fencingToken: lock.fencingToken });
      expect(holder?.metadata).toBe(metadata);
      await lock.release();
    }
  });

  it('a release leaves the metadata to expire, and inspect never shows it for the next, foreign holder', async () => {
    const locks = provider();
    const name = key('stale');
    const { meta } = redisLockKeys('', name);
    const lock = await locks.acquire(name, { metadata: 'ours', ttlMs: 10_000 });
    expect(await lock.release()).toBe(true);
    const pttl = await raw.pttl(meta);
    expect(pttl > 0 && pttl <= 10_000).toBe(true);
    expect(await locks.inspect(name)).toBeUndefined();
    expect(await raw.set(name, 'foreign', 'PX', 10_000, 'NX')).toBe('OK');
    expect((await locks.inspect(name))?.holders).toEqual([
      { ownerId: 'foreign', mode: 'exclusive', fencingToken: undefined, remainingMs: expect.any(Number), metadata: undefined },
    ]);
    await raw.del(name);
    // The next holder of ours overwrites it.
    const next = await locks.acquire(name);
    expect((await locks.inspect(name))?.holders[0]).toMatchObject({ ownerId: next.ownerId, fencingToken: next.fencingToken, metadata: undefined });
    await next.release();
  });

  it('a metadata key in a form it does not know (a hash of an older layout, anything else) reads as no metadata', async () => {
    const locks = provider();
    const name = key('foreign-meta');
    const { meta } = redisLockKeys('', name);
    const lock = await locks.acquire(name, { metadata: 'ours' });
    for (const value of ['garbage', '12 x owner', '']) {
      await raw.set(meta, value, 'PX', 10_000);
      expect((await locks.inspect(name))?.holders[0], value).toMatchObject({ ownerId: lock.ownerId, fencingToken: undefined, metadata: undefined });
    }
    await raw.del(meta);
    await raw.hset(meta, 'owner', lock.ownerId, 'token', '1');
    expect((await locks.inspect(name))?.holders[0]).toMatchObject({ ownerId: lock.ownerId, fencingToken: undefined, metadata: undefined });
    await lock.release();
  });

  // Something else wrote a value of another type at a key the scripts use: the lock key itself (an
  // application's hash under the same name) or a side key. Waiting cannot change that, so the
  // acquire fails at once, with its own code, and nothing of the foreign value is touched.
  describe('a key of another type (WRONGTYPE)', () => {
    const sides = ['lock', 'fence', 'waiters'] as const;
    for (const side of sides) {
      it(`at the ${side} key: the acquire fails at once with LOCK_KEY_CONFLICT, leaves the value as it was, and no lock behind`, async () => {
        const locks = provider();
        const name = key(`wrongtype-${side}`);
        const keys = redisLockKeys('', name);
        await raw.hset(keys[side], 'app', 'data');
        // An unbounded wait: an acquire that retried the conflict would never settle.
        const error: unknown = await locks.acquire(name, { waitMs: Number.POSITIVE_INFINITY }).then(
          () => undefined,
          (failure: unknown) => failure,
        );
        expect(error).toMatchObject({ code: 'LOCK_KEY_CONFLICT', key: name });
        expect((error as Error).message).toContain('WRONGTYPE');
        expect((error as Error).message).toContain(keys.lock);
        expect(await raw.type(keys[side])).toBe('hash');
        expect(await raw.hgetall(keys[side])).toEqual({ app: 'data' });
        // A script that failed part way may have set the lock key first: that stray lock is released.
        if (side !== 'lock') await waitFor(async () => ((await raw.exists(keys.lock)) === 0 ? true : undefined), { timeoutMs: 10_000, what: 'the stray lock key to be released' });
        // A single try says the same, and so does inspect where it reads the foreign value.
        await expect(locks.tryAcquire(name)).rejects.toMatchObject({ code: 'LOCK_KEY_CONFLICT' });
        if (side === 'lock') await expect(locks.inspect(name)).rejects.toMatchObject({ code: 'LOCK_KEY_CONFLICT', key: name });
        // Once the foreign value is gone, the key locks as any other.
        await raw.del(keys[side]);
        const lock = await locks.acquire(name);
        expect(lock.fencingToken).toBeGreaterThan(0n);
        await lock.release();
      });
    }

    it('names the keys as they are on the server, with the provider\'s keyPrefix', async () => {
      const prefixed = createRedisLockProvider({ connection: redisUrl, keyPrefix: 'conflict-prefix:' });
      open.push(prefixed);
      const name = key('wrongtype-prefixed');
      await raw.hset(`conflict-prefix:${name}`, 'app', 'data');
      await expect(prefixed.inspect(name)).rejects.toThrow(`"conflict-prefix:${name}"`);
      await expect(prefixed.tryAcquire(name)).rejects.toThrow(`"conflict-prefix:${name}"`);
      await raw.del(`conflict-prefix:${name}`);
    });

    it('at a held lock\'s key: that lock alone is lost; the locks extended in the same batch keep theirs; the value stays', async () => {
      const locks = provider();
      const [a, b] = [key('wrongtype-held-a'), key('wrongtype-held-b')];
      const overwritten = await locks.acquire(a, { autoExtend: false });
      const kept = await locks.acquire(b, { autoExtend: false });
      await raw.del(a);
      await raw.hset(a, 'app', 'data');
      // Asked in one turn: one script call for both.
      const [lost, extended] = await Promise.allSettled([overwritten.extend(), kept.extend()]);
      expect(lost).toMatchObject({ status: 'rejected', reason: { code: 'LOCK_LOST', reason: 'taken-over' } });
      expect(extended.status).toBe('fulfilled');
      expect(overwritten.signal.aborted).toBe(true);
      // Alone, too.
      const single = await locks.acquire(key('wrongtype-held-single'), { autoExtend: false });
      await raw.del(single.key);
      await raw.hset(single.key, 'app', 'data');
      await expect(single.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
      // A release finds it not ours, and leaves it.
      const released = await locks.acquire(key('wrongtype-held-release'), { autoExtend: false });
      await raw.del(released.key);
      await raw.hset(released.key, 'app', 'data');
      expect(await released.release()).toBe(false);
      for (const name of [a, single.key, released.key]) expect(await raw.hgetall(name)).toEqual({ app: 'data' });
      expect(await kept.release()).toBe(true);
      await raw.del(a, single.key, released.key);
    });
  });
});
