import { describe, expect, it } from 'vitest';
import { LockErrorCode, MemoryLockProvider, MemoryLockStore, monotonicNow } from '../src/adapter.js';

describe('one backend contender per key and mode in a provider', () => {
  it('queues waiting calls locally: the backend sees one waiter, and each call gets the lock in arrival order', async () => {
    const store = new MemoryLockStore();
    const [holder, waiters] = [new MemoryLockProvider({ store }), new MemoryLockProvider({ store })];
    const held = await holder.acquire('k');
    const order: number[] = [];
    const calls = Array.from({ length: 50 }, (_, index) =>
      waiters.acquire('k', { waitMs: 10_000 }).then(async (lock) => {
        order.push(index);
        expect(store.waiting('k')).toBeLessThanOrEqual(1);
        await lock.release();
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.waiting('k')).toBe(1);
    await held.release();
    await Promise.all(calls);
    expect(order).toEqual(Array.from({ length: 50 }, (_, index) => index));
    expect(store.size).toBe(0);
    await Promise.all([holder.close(), waiters.close()]);
  });

  it('a herd of waiters settles by its deadline, the queued ones without touching the backend', async () => {
    const store = new MemoryLockStore();
    const [holder, waiters] = [new MemoryLockProvider({ store }), new MemoryLockProvider({ store })];
    const held = await holder.acquire('k');
    const deadline = monotonicNow() + 100;
    const settled = await Promise.allSettled(Array.from({ length: 1_000 }, () => waiters.acquire('k', { waitMs: 100 })));
    expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
    expect(settled.every((result) => result.status === 'rejected' && (result.reason as { code?: string }).code === LockErrorCode.TIMEOUT)).toBe(true);
    expect(store.waiting('k')).toBe(0);
    await held.release();
    expect(store.size).toBe(0);
    await Promise.all([holder.close(), waiters.close()]);
  });

  it('the next call in line takes over when the head aborts', async () => {
    const store = new MemoryLockStore();
    const [holder, waiters] = [new MemoryLockProvider({ store }), new MemoryLockProvider({ store })];
    const held = await holder.acquire('k');
    const controller = new AbortController();
    const head = waiters.acquire('k', { waitMs: 10_000, signal: controller.signal });
    const second = waiters.acquire('k', { waitMs: 10_000 });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await expect(head).rejects.toMatchObject({ code: LockErrorCode.ABORTED });
    expect(store.waiting('k')).toBe(1);
    await held.release();
    const lock = await second;
    expect(lock.isHeld()).toBe(true);
    await lock.release();
    await Promise.all([holder.close(), waiters.close()]);
  });

  it('shared and exclusive calls queue in separate lines, and shared holders still overlap', async () => {
    const provider = new MemoryLockProvider();
    const readers = await Promise.all([provider.acquire('k', { mode: 'shared' }), provider.acquire('k', { mode: 'shared' })]);
    expect(readers.every((lock) => lock.isHeld())).toBe(true);
    await Promise.all(readers.map((lock) => lock.release()));
    await provider.close();
  });
});
