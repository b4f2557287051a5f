import { type LockHandle, type LockProvider, isLockError, withLock } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { isPending, nextEvent, within, type SuiteContext } from '../context.js';

/** Waiting, timeouts, aborts, ordering and mutual exclusion under real concurrency. */
export function registerContentionCases(ctx: SuiteContext): void {
  describe('contention', () => {
    it('acquire waits while the key is held and succeeds after release', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('wait');
      const holder = await a.acquire(key);
      const queued = nextEvent(b, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const waiting = b.acquire(key, { waitMs: ctx.bound(10_000) });
      await queued;
      expect(await isPending(waiting)).toBe(true);
      expect(await holder.release()).toBe(true);
      const next = await within(waiting, ctx.bound(10_000), 'the waiter to acquire after release');
      expect(next.isHeld()).toBe(true);
      expect(next.ownerId).not.toBe(holder.ownerId);
      await next.release();
    });

    it('acquire rejects with LOCK_TIMEOUT when the wait runs out, and leaves nothing behind', async () => {
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      const key = ctx.key('timeout');
      const holder = await a.acquire(key);
      const timedOut = nextEvent(b, 'timeout', (e) => e.key === key, ctx.bound(5_000));
      await expect(b.acquire(key, { waitMs: ctx.bound(200) })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT', key });
      // A lower bound with slack for timer granularity: an implementation that ignores waitMs fails it.
      expect((await timedOut).waitedMs).toBeGreaterThanOrEqual(ctx.bound(200) * 0.9);
      await holder.release();
      // A queued entry left by the timed-out waiter would block this try.
      const next = await c.tryAcquire(key);
      expect(next).toBeDefined();
      await next?.release();
    });

    it('an already-aborted signal rejects with LOCK_ABORTED and takes nothing', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('pre-abort');
      const controller = new AbortController();
      controller.abort(new Error('caller gave up'));
      const error: unknown = await a.acquire(key, { signal: controller.signal }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'LOCK_ABORTED', name: 'AbortError' });
      expect((error as Error).cause).toBe(controller.signal.reason);
      await expect(a.tryAcquire(key, { signal: controller.signal })).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
      const free = await b.tryAcquire(key);
      expect(free).toBeDefined();
      await free?.release();
    });

    it('aborting during the wait rejects with LOCK_ABORTED and leaves nothing behind', async () => {
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      const key = ctx.key('abort');
      const holder = await a.acquire(key);
      const controller = new AbortController();
      const queued = nextEvent(b, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const waiting = b.acquire(key, { waitMs: ctx.bound(30_000), signal: controller.signal });
      await queued;
      controller.abort();
      await expect(within(waiting, ctx.bound(5_000), 'the aborted waiter to reject')).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
      await holder.release();
      const next = await c.tryAcquire(key);
      expect(next).toBeDefined();
      await next?.release();
    });

    it('waiters all make progress, in arrival order when the provider claims fifo', async () => {
      const providers = [await ctx.provider(), await ctx.provider(), await ctx.provider(), await ctx.provider()];
      const [first, ...others] = providers as [LockProvider, ...LockProvider[]];
      const key = ctx.key('fifo');
      const holder = await first.acquire(key);
      const order: number[] = [];
      const waiters: Promise<void>[] = [];
      for (const [index, provider] of others.entries()) {
        const queued = nextEvent(provider, 'contended', (e) => e.key === key, ctx.bound(5_000));
        waiters.push(
          provider.acquire(key, { waitMs: ctx.bound(20_000) }).then(async (lock) => {
            order.push(index);
            await lock.release();
          }),
        );
        await queued;
      }
      await holder.release();
      await within(Promise.all(waiters), ctx.bound(20_000), 'every waiter to acquire once');
      expect([...order].sort()).toEqual([0, 1, 2]);
      if (first.capabilities.fifo) expect(order).toEqual([0, 1, 2]);
    });

    it('gives mutual exclusion to many clients updating a shared counter', async () => {
      const { clients, rounds } = ctx.options.concurrency ?? { clients: 4, rounds: 10 };
      const providers = await Promise.all(Array.from({ length: clients }, () => ctx.provider()));
      const key = ctx.key('counter');
      let counter = 0;
      let inside = 0;
      let overlaps = 0;
      const work = async (provider: LockProvider): Promise<void> => {
        for (let round = 0; round < rounds; round += 1) {
          await withLock(
            provider,
            key,
            async () => {
              inside += 1;
              if (inside > 1) overlaps += 1;
              const read = counter;
              await new Promise((resolve) => setImmediate(resolve));
              counter = read + 1;
              inside -= 1;
            },
            { waitMs: ctx.bound(60_000) },
          );
        }
      };
      await Promise.all(providers.map(work));
      expect(overlaps).toBe(0);
      expect(counter).toBe(clients * rounds);
    }, ctx.caseTimeout(60_000));

    it('withLock releases when the function throws, and passes the error on', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('with-lock-throws');
      let seen: LockHandle | undefined;
      const failure = new Error('work failed');
      await expect(
        withLock(a, key, (lock) => {
          seen = lock;
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(seen?.isHeld()).toBe(false);
      const next = await b.tryAcquire(key);
      expect(next).toBeDefined();
      await next?.release();
    });

    it('emits acquired, contended and released events with durations', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('events');
      const acquired = nextEvent(a, 'acquired', (e) => e.key === key, ctx.bound(5_000));
      const holder = await a.acquire(key);
      const event = await acquired;
      expect(event).toMatchObject({ provider: a.name, key, mode: 'exclusive', ownerId: holder.ownerId, contended: false });
      expect(event.waitedMs).toBeGreaterThanOrEqual(0);
      const contended = nextEvent(b, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const secondAcquired = nextEvent(b, 'acquired', (e) => e.key === key, ctx.bound(10_000));
      const waiting = b.acquire(key, { waitMs: ctx.bound(10_000) });
      await contended;
      const released = nextEvent(a, 'released', (e) => e.key === key, ctx.bound(5_000));
      await holder.release();
      expect(await released).toMatchObject({ ownerId: holder.ownerId, wasHeld: true });
      expect((await secondAcquired).contended).toBe(true);
      await (await waiting).release();
    });

    it('never lets a failed acquire escape as anything but a LockError', async () => {
      const provider = await ctx.provider();
      const key = ctx.key('typed');
      const holder = await provider.acquire(key);
      const error = await provider.acquire(key, { waitMs: ctx.bound(20) }).catch((e: unknown) => e);
      expect(isLockError(error)).toBe(true);
      await holder.release();
    });
  });
}
