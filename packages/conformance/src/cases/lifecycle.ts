import { describe, expect, it } from 'vitest';
import { abortedWithin, type SuiteContext } from '../context.js';

/** Provider shutdown. */
export function registerLifecycleCases(ctx: SuiteContext): void {
  describe('lifecycle', () => {
    it('close() releases held locks, aborts their signals, and refuses later calls', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('close');
      const lock = await a.acquire(key);
      await a.close();
      const reason = await abortedWithin(lock.signal, ctx.bound(1_000), 'the handle signal on close');
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'provider-closed' });
      expect(lock.isHeld()).toBe(false);
      const next = await b.tryAcquire(key);
      expect(next).toBeDefined();
      await expect(a.acquire(ctx.key('closed'))).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
      await expect(a.close()).resolves.toBeUndefined();
      expect(await lock.release()).toBe(false);
      await next?.release();
    });

    it('close() ends waits in progress', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('close-waiting');
      const holder = await a.acquire(key);
      const waiting = b.acquire(key, { waitMs: ctx.bound(30_000) });
      const settled = waiting.then(
        () => 'acquired',
        (error: unknown) => (error as { code?: string }).code,
      );
      await b.close();
      expect(await settled).toBe('LOCK_BACKEND_UNAVAILABLE');
      await holder.release();
    });
  });
}
