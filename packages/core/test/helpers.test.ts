import { describe, expect, it } from 'vitest';
import { MemoryLockProvider, MemoryLockStore, acquireAll, withLock, type LockHandle } from '../src/adapter.js';

describe('withLock', () => {
  it('returns the result and releases', async () => {
    const provider = new MemoryLockProvider();
    const result = await withLock(provider, 'job', (lock) => {
      expect(lock.isHeld()).toBe(true);
      return 42;
    });
    expect(result).toBe(42);
    expect(await provider.inspect('job')).toBeUndefined();
  });

  it('rejects with LOCK_LOST when the lock was lost while the function ran', async () => {
    const provider = new MemoryLockProvider();
    const error = await withLock(
      provider,
      'job',
      (lock) => new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve('done anyway'))),
      { ttlMs: 30, autoExtend: false },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LOCK_LOST', reason: 'expired', key: 'job' });
  });
});

describe('acquireAll', () => {
  it('takes keys in sorted order, so opposite orders cannot deadlock', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [new MemoryLockProvider({ store }), new MemoryLockProvider({ store })];
    const order: string[] = [];
    a.on('acquired', (e) => order.push(`a:${e.key}`));
    b.on('acquired', (e) => order.push(`b:${e.key}`));
    const run = async (provider: MemoryLockProvider, keys: string[]): Promise<void> => {
      for (let round = 0; round < 20; round += 1) {
        const set = await acquireAll(provider, keys, { waitMs: 5_000 });
        await new Promise((resolve) => setImmediate(resolve));
        expect(await set.release()).toBe(true);
      }
    };
    await Promise.all([run(a, ['x', 'y', 'z']), run(b, ['z', 'y', 'x'])]);
    expect(order.filter((entry) => entry.startsWith('a:')).slice(0, 3)).toEqual(['a:x', 'a:y', 'a:z']);
    expect(order.filter((entry) => entry.startsWith('b:')).slice(0, 3)).toEqual(['b:x', 'b:y', 'b:z']);
  });

  it('releases what it took when a later key times out, under one deadline', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [new MemoryLockProvider({ store }), new MemoryLockProvider({ store })];
    const blocker = await b.acquire('m');
    await expect(acquireAll(a, ['n', 'm', 'l'], { waitMs: 50 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    expect(await b.inspect('l')).toBeUndefined();
    await blocker.release();
  });

  it('refuses duplicate keys, an empty set and bad keys before taking anything', async () => {
    const provider = new MemoryLockProvider();
    await expect(acquireAll(provider, ['a', 'a'])).rejects.toBeInstanceOf(RangeError);
    await expect(acquireAll(provider, [])).rejects.toBeInstanceOf(RangeError);
    await expect(acquireAll(provider, ['a', 7 as never])).rejects.toBeInstanceOf(TypeError);
    expect(await provider.inspect('a')).toBeUndefined();
  });

  it('aborts the set signal when one lock is lost', async () => {
    const provider = new MemoryLockProvider();
    const set = await acquireAll(provider, ['p', 'q'], { ttlMs: 30, autoExtend: false });
    await new Promise((resolve) => set.signal.addEventListener('abort', resolve));
    expect(set.signal.reason).toMatchObject({ code: 'LOCK_LOST' });
    expect(await set.release()).toBe(false);
  });
});

describe('events', () => {
  it('report lost and extended locks with durations', async () => {
    const provider = new MemoryLockProvider();
    const seen: string[] = [];
    provider.on('extended', (e) => seen.push(`extended:${e.automatic}`));
    const lost = new Promise<number>((resolve) => provider.on('lost', (e) => resolve(e.heldMs)));
    const lock: LockHandle = await provider.acquire('e', { ttlMs: 40, autoExtend: false });
    await lock.extend(40);
    expect(await lost).toBeGreaterThanOrEqual(40);
    expect(seen).toEqual(['extended:false']);
  });

  it('keep a throwing listener from breaking the operation', async () => {
    const provider = new MemoryLockProvider();
    provider.on('acquired', () => {
      throw new Error('listener bug');
    });
    const uncaught = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    const lock = await provider.acquire('listener');
    expect(lock.isHeld()).toBe(true);
    expect(await uncaught).toMatchObject({ message: 'listener bug' });
    await lock.release();
  });
});
