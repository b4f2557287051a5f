import { monotonicNow } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { abortedWithin, nextEvent, within, type SuiteContext } from '../context.js';

/** TTLs, extension, the loss signal and the hold bound. */
export function registerExpiryCases(ctx: SuiteContext): void {
  const harness = ctx.options.harness ?? {};
  describe('expiry and extension', () => {
    it('frees an abandoned lock by expiry, never before its holder\'s validity ends, and signals the loss', async ({ skip }) => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const { ttlMs, session } = await ctx.ttl();
      const key = ctx.key('abandoned');
      if (session) {
        // Session-bound locks live as long as their session: abandoning means the session dies.
        if (harness.crashProvider === undefined) return skip('session provider: needs harness.crashProvider');
        const lock = await a.acquire(key);
        await harness.crashProvider(a);
        const next = await b.acquire(key, { waitMs: ctx.bound(ttlMs * 3 + 5_000) });
        expect(monotonicNow()).toBeGreaterThanOrEqual(lock.validUntil);
        await next.release();
        return;
      }
      const lock = await a.acquire(key, { ttlMs, autoExtend: false });
      const next = await b.acquire(key, { waitMs: ctx.bound(ttlMs * 3 + 5_000) });
      // Safety: the second holder can only start after the first one's validity ended.
      expect(next.acquiredAt).toBeGreaterThanOrEqual(lock.validUntil);
      expect(lock.isHeld()).toBe(false);
      if (a.capabilities.lossDetection) {
        const reason = await abortedWithin(lock.signal, ctx.bound(1_000), 'the loss signal');
        expect(reason).toMatchObject({ code: 'LOCK_LOST', key });
        expect(lock.state).toBe('lost');
      }
      if (a.capabilities.fencing !== 'none') expect(next.fencingToken).toBeGreaterThan(lock.fencingToken ?? -1n);
      // Release by the old, expired owner resolves false and leaves the new holder alone.
      expect(await lock.release()).toBe(false);
      expect((await b.inspect(key))?.holders[0]?.ownerId).toBe(next.ownerId);
      expect(await a.tryAcquire(key)).toBeUndefined();
      await next.release();
    }, ctx.caseTimeout(20_000));

    it('extend prolongs a held lock past its first TTL (or rejects with LOCK_UNSUPPORTED)', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const { ttlMs, session } = await ctx.ttl();
      const key = ctx.key('extend');
      const lock = await a.acquire(key, session ? {} : { ttlMs, autoExtend: false });
      if (!a.capabilities.extend) {
        await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        expect(lock.isHeld()).toBe(true);
        await lock.release();
        return;
      }
      const firstDeadline = lock.validUntil;
      const sent = monotonicNow();
      if (session) {
        // A session's timeout is fixed: extend() renews it now and refuses a per-lock TTL.
        await expect(lock.extend(ttlMs * 3)).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await lock.extend();
      } else {
        await lock.extend(ttlMs * 3);
      }
      const extendedTtl = session ? ttlMs : ttlMs * 3;
      expect(lock.validUntil).toBeGreaterThan(firstDeadline);
      // Validity counts from the send time of the extend, never from the reply.
      expect(lock.validUntil).toBeLessThanOrEqual(monotonicNow() + extendedTtl);
      expect(lock.validUntil).toBeGreaterThanOrEqual(sent);
      await within(
        new Promise((resolve) => setTimeout(resolve, Math.max(0, firstDeadline - monotonicNow()) + 50)),
        ctx.bound(extendedTtl + ttlMs),
        'the first TTL to pass',
      );
      expect(lock.isHeld()).toBe(true);
      expect(await b.tryAcquire(key)).toBeUndefined();
      expect(await lock.release()).toBe(true);
    }, ctx.caseTimeout(20_000));

    it('extend after expiry rejects with LOCK_LOST and does not bring the lock back', async ({ skip }) => {
      const { ttlMs, session } = await ctx.ttl();
      if (session) return skip('session provider: its locks expire with the session (see the fault cases)');
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('extend-expired');
      const lock = await a.acquire(key, { ttlMs, autoExtend: false });
      await abortedWithin(lock.signal, ctx.bound(ttlMs + 2_000), 'the lock to expire');
      const expected = a.capabilities.extend ? 'LOCK_LOST' : 'LOCK_UNSUPPORTED';
      await expect(lock.extend()).rejects.toMatchObject({ code: expected });
      expect(lock.isHeld()).toBe(false);
      const next = await b.acquire(key, { waitMs: ctx.bound(ttlMs + 5_000) });
      if (a.capabilities.fencing !== 'none') expect(next.fencingToken).toBeGreaterThan(lock.fencingToken ?? -1n);
      await next.release();
    }, ctx.caseTimeout(20_000));

    it('automatic extension keeps a lock past its TTL while the holder lives', async () => {
      const { ttlMs, session } = await ctx.ttl();
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('auto-extend');
      const lock = await a.acquire(key, session ? {} : { ttlMs });
      const firstDeadline = lock.validUntil;
      if (!session && a.capabilities.extend) {
        // Four renewals at a third of the TTL each take the lock well past its first deadline.
        for (let renewal = 0; renewal < 4; renewal += 1) {
          await nextEvent(a, 'extended', (e) => e.ownerId === lock.ownerId && e.automatic, ctx.bound(ttlMs * 2));
        }
        expect(monotonicNow()).toBeGreaterThan(firstDeadline);
      }
      expect(lock.isHeld()).toBe(true);
      expect(await b.tryAcquire(key)).toBeUndefined();
      await lock.release();
    }, ctx.caseTimeout(20_000));

    it('maxHoldMs ends the hold: the signal aborts with reason max-hold and the key is freed', async () => {
      const { ttlMs } = await ctx.ttl();
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('max-hold');
      const lock = await a.acquire(key, { maxHoldMs: Math.ceil(ttlMs / 2) });
      const reason = await abortedWithin(lock.signal, ctx.bound(ttlMs + 2_000), 'the hold bound');
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'max-hold' });
      const next = await b.acquire(key, { waitMs: ctx.bound(ttlMs + 5_000) });
      expect(next.isHeld()).toBe(true);
      await next.release();
    }, ctx.caseTimeout(20_000));
  });
}
