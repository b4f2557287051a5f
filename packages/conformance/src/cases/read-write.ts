import { describe, expect, it } from 'vitest';
import { isPending, nextEvent, within, type SuiteContext } from '../context.js';

/** Shared (read) locks where claimed; a LOCK_UNSUPPORTED refusal where not. */
export function registerReadWriteCases(ctx: SuiteContext): void {
  describe('read-write', () => {
    it('shared locks coexist and exclude exclusive ones (or are refused with LOCK_UNSUPPORTED)', async () => {
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      const key = ctx.key('rw');
      if (!a.capabilities.readWrite) {
        await expect(a.acquire(key, { mode: 'shared' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await expect(a.tryAcquire(key, { mode: 'shared' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        const free = await b.tryAcquire(key);
        expect(free).toBeDefined();
        await free?.release();
        return;
      }
      const reader1 = await a.acquire(key, { mode: 'shared' });
      const reader2 = await b.tryAcquire(key, { mode: 'shared' });
      expect(reader1.mode).toBe('shared');
      expect(reader2?.isHeld()).toBe(true);
      const info = await c.inspect(key);
      expect(info?.holders.map((h) => h.ownerId).sort()).toEqual([reader1.ownerId, reader2?.ownerId].sort());
      expect(await c.tryAcquire(key)).toBeUndefined();
      const queued = nextEvent(c, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const writer = c.acquire(key, { waitMs: ctx.bound(10_000) });
      await queued;
      await reader1.release();
      expect(await isPending(writer)).toBe(true);
      await reader2?.release();
      const held = await within(writer, ctx.bound(10_000), 'the writer after both readers left');
      expect(held.mode).toBe('exclusive');
      expect(await a.tryAcquire(key, { mode: 'shared' })).toBeUndefined();
      await held.release();
      const reader3 = await a.tryAcquire(key, { mode: 'shared' });
      expect(reader3).toBeDefined();
      await reader3?.release();
    });

    it('a waiting writer is not starved by later readers when the provider claims fifo', async () => {
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      if (!a.capabilities.readWrite) {
        await expect(a.tryAcquire(ctx.key('rw-fifo'), { mode: 'shared' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        return;
      }
      const key = ctx.key('rw-fifo');
      const reader = await a.acquire(key, { mode: 'shared' });
      const queued = nextEvent(b, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const writer = b.acquire(key, { waitMs: ctx.bound(10_000) });
      await queued;
      const lateReader = await c.tryAcquire(key, { mode: 'shared' });
      if (a.capabilities.fifo) expect(lateReader).toBeUndefined();
      await lateReader?.release();
      await reader.release();
      const held = await within(writer, ctx.bound(10_000), 'the writer');
      await held.release();
    });
  });
}
