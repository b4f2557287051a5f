import type { LockHandle } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { within, type SuiteContext } from '../context.js';

const LINE_WAITERS = 20;
const POLL_MS = 20;

/** Reads `read()` until `done` accepts it or `ms` passed; resolves the last value read. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number): Promise<T> {
  const until = performance.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || performance.now() >= until) return value;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
const HERD_WAITERS = 300;

/** Many waiters in one process: one backend contender per key, and every wait keeps its bound. */
export function registerLoadCases(ctx: SuiteContext): void {
  const harness = ctx.options.harness ?? {};
  describe('under load', () => {
    const count = harness.backendWaiters;
    it.skipIf(count === undefined)(
      `${count === undefined ? '[skipped: needs harness.backendWaiters] ' : ''}${LINE_WAITERS} waiters in one provider make one backend contender, and each gets the lock in turn`,
      async () => {
        const [a, b] = [await ctx.provider(), await ctx.provider()];
        const key = ctx.key('local-line');
        const holder = await a.acquire(key);
        let contended = 0;
        let allContended: () => void = () => undefined;
        const queued = new Promise<void>((resolve) => {
          allContended = resolve;
        });
        const off = b.on('contended', (event) => {
          if (event.key === key && ++contended === LINE_WAITERS) allContended();
        });
        const order: number[] = [];
        const calls = Array.from({ length: LINE_WAITERS }, (_, index) =>
          b.acquire(key, { waitMs: ctx.bound(60_000) }).then(async (lock: LockHandle) => {
            order.push(index);
            await lock.release();
          }),
        );
        await within(queued, ctx.bound(10_000), `${LINE_WAITERS} contended events`);
        off();
        // The backend is asked by the head of the line only, once its request has landed.
        expect(await eventually(() => count!(key), (seen) => seen > 0, ctx.bound(10_000))).toBe(1);
        await holder.release();
        await within(Promise.all(calls), ctx.bound(60_000), 'every waiter to acquire once');
        expect([...order].sort((x, y) => x - y)).toEqual(Array.from({ length: LINE_WAITERS }, (_, index) => index));
        expect(await eventually(() => count!(key), (seen) => seen === 0, ctx.bound(10_000))).toBe(0);
      },
      ctx.caseTimeout(90_000),
    );

    it(`a herd of ${HERD_WAITERS} waiters on a held key: every call settles with LOCK_TIMEOUT and nothing is left behind`, async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('herd');
      const holder = await a.acquire(key);
      const waitMs = ctx.bound(300);
      const settled = await within(
        Promise.allSettled(Array.from({ length: HERD_WAITERS }, () => b.acquire(key, { waitMs }))),
        ctx.bound(30_000),
        'every waiter of the herd to settle',
      );
      const codes = new Set(settled.map((result) => (result.status === 'rejected' ? (result.reason as { code?: string }).code : 'acquired')));
      expect([...codes]).toEqual(['LOCK_TIMEOUT']);
      // Clean-up of a timed-out waiter may run after its call settled, but it runs.
      if (count !== undefined) expect(await eventually(() => count(key), (seen) => seen === 0, ctx.bound(10_000))).toBe(0);
      expect(await holder.release()).toBe(true);
      const next = await b.acquire(key, { waitMs: ctx.bound(5_000) });
      await next.release();
    }, ctx.caseTimeout(60_000));
  });
}
