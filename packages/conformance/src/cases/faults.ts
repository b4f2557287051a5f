import { monotonicNow } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { abortedWithin, freezeThread, type SuiteContext } from '../context.js';

/** Faults: a paused holder, a paused or restarted backend, a lock deleted behind its holder's back, a crashed client. */
export function registerFaultCases(ctx: SuiteContext): void {
  const harness = ctx.options.harness ?? {};
  describe('faults', () => {
    it('holder paused past its validity (a GC pause): loses the lock at once on resume, and the next holder is fenced above it', async () => {
      const { ttlMs, session } = await ctx.ttl();
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('paused-holder');
      const lock = await a.acquire(key, session ? {} : { ttlMs });
      // Frozen for the TTL the lock was asked for (not its reported validity, which a broken provider may inflate).
      freezeThread(ttlMs + ctx.bound(1_500));
      // Checked before any timer had a chance to run: the handle reads the clock itself.
      expect(lock.isHeld()).toBe(false);
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toMatchObject({ code: 'LOCK_LOST' });
      await expect(lock.extend()).rejects.toMatchObject({ code: a.capabilities.extend ? 'LOCK_LOST' : 'LOCK_UNSUPPORTED' });
      const next = await b.acquire(key, { waitMs: ctx.bound(20_000) });
      if (a.capabilities.fencing !== 'none') expect(next.fencingToken! > lock.fencingToken!).toBe(true);
      expect(await lock.release()).toBe(false);
      expect(next.isHeld()).toBe(true);
      expect((await b.inspect(key))?.holders[0]?.ownerId).toBe(next.ownerId);
      await next.release();
    }, ctx.caseTimeout(40_000));

    it('holder paused past its validity, then two contenders at once: one grant at most, and the key stays usable', async () => {
      const { ttlMs, session } = await ctx.ttl();
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      const key = ctx.key('paused-two-contenders');
      const lock = await a.acquire(key, session ? {} : { ttlMs, autoExtend: false });
      freezeThread(ttlMs + ctx.bound(1_500));
      // Both requests start in the same turn, before any expiry timer has run (as after a GC pause);
      // nothing has looked at the old holder since.
      const results = await Promise.all([b.tryAcquire(key), c.tryAcquire(key)]);
      const granted = results.filter((handle) => handle !== undefined);
      expect(granted.length).toBeLessThanOrEqual(1);
      // A per-lock TTL has certainly run out on the backend: the key is free, so one of them wins. Where
      // a majority vote of independent servers decides (Redlock with only a bare majority up), the two
      // may split the vote and neither wins: then a try of its own, right after, must win.
      const winner = !session && granted.length === 0 ? await b.tryAcquire(key) : granted[0];
      if (!session) expect(winner).toBeDefined();
      expect(await lock.release()).toBe(false);
      if (winner !== undefined) {
        if (a.capabilities.fencing !== 'none') expect(winner.fencingToken! > lock.fencingToken!).toBe(true);
        expect((await a.inspect(key))?.holders.map((h) => h.ownerId)).toEqual([winner.ownerId]);
        expect(await winner.release()).toBe(true);
      }
      // Nothing was left behind on the key: a third contender gets it at once after the winner's release.
      const after = await a.acquire(key, { waitMs: ctx.bound(session ? 20_000 : 5_000) });
      expect((await b.inspect(key))?.holders.map((h) => h.ownerId)).toEqual([after.ownerId]);
      expect(await after.release()).toBe(true);
    }, ctx.caseTimeout(40_000));

    const pause = harness.pauseBackend;
    it.skipIf(pause === undefined)(
      `${pause === undefined ? '[skipped: needs harness.pauseBackend] ' : ''}backend paused past the TTL: the holder's signal aborts by its own deadline`,
      async () => {
        const { ttlMs, session } = await ctx.ttl();
        const [a, b] = [await ctx.provider(), await ctx.provider()];
        const key = ctx.key('paused-backend');
        const lock = await a.acquire(key, session ? {} : { ttlMs });
        const deadline = lock.validUntil;
        const paused = pause!(ttlMs + ctx.bound(1_500));
        const reason = await abortedWithin(lock.signal, ttlMs + ctx.bound(1_000), 'the loss signal while the backend is silent');
        expect(reason).toMatchObject({ code: 'LOCK_LOST' });
        // Never declared lost before its validity actually ended... and never long after it.
        expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
        await paused;
        const next = await b.acquire(key, { waitMs: ctx.bound(30_000) });
        if (a.capabilities.fencing !== 'none') expect(next.fencingToken! > lock.fencingToken!).toBe(true);
        await next.release();
      },
      ctx.caseTimeout(60_000),
    );

    const restart = harness.restartBackend;
    it.skipIf(restart === undefined)(
      `${restart === undefined ? '[skipped: needs harness.restartBackend] ' : ''}backend restarted: providers recover and tokens never go backwards`,
      async () => {
        const [a, b] = [await ctx.provider(), await ctx.provider()];
        const key = ctx.key('restart');
        const before = await a.acquire(key);
        expect(await before.release()).toBe(true);
        await restart!();
        const after = await b.acquire(key, { waitMs: ctx.bound(30_000) });
        if (b.capabilities.fencing !== 'none') expect(after.fencingToken! > before.fencingToken!).toBe(true);
        await after.release();
        const again = await a.acquire(key, { waitMs: ctx.bound(30_000) });
        if (a.capabilities.fencing !== 'none') expect(again.fencingToken! > after.fencingToken!).toBe(true);
        await again.release();
      },
      ctx.caseTimeout(60_000),
    );

    const deleteLock = harness.deleteLock;
    it.skipIf(deleteLock === undefined)(
      `${deleteLock === undefined ? '[skipped: needs harness.deleteLock] ' : ''}lock deleted behind the holder's back: the holder notices as its capabilities declare, and never takes it back`,
      async () => {
        const [a, b] = [await ctx.provider(), await ctx.provider()];
        const notice = a.capabilities.deletionNotice;
        const session = a.capabilities.expiry === 'session';
        // Long enough that a notice at the next renewal (a third of the TTL) comes well before validity ends.
        const ttlMs = session ? undefined : Math.max(6_000, a.capabilities.minTtlMs);
        const key = ctx.key('deleted');
        const lock = await a.acquire(key, ttlMs === undefined ? {} : { ttlMs });
        const validUntil = lock.validUntil;
        await deleteLock!(key);
        const deletedAt = monotonicNow();
        // The hazard an operator creates: the key is free at once, for anyone.
        const next = await b.acquire(key, { waitMs: ctx.bound(5_000) });
        const bound =
          notice === 'watch'
            ? ctx.bound(2_000)
            : notice === 'renewal'
              ? (ttlMs ?? 0) / 3 + ctx.bound(2_000)
              : validUntil - deletedAt + ctx.bound(2_000);
        const reason = await abortedWithin(lock.signal, bound, `the loss signal after the lock was deleted (${notice})`);
        expect(reason).toMatchObject({ code: 'LOCK_LOST' });
        // A watch or a failed renewal tells before the validity the handle had when the record went.
        if (notice !== 'validity') expect(monotonicNow()).toBeLessThan(validUntil);
        expect(lock.isHeld()).toBe(false);
        await expect(lock.extend()).rejects.toMatchObject({ code: a.capabilities.extend ? 'LOCK_LOST' : 'LOCK_UNSUPPORTED' });
        expect(await lock.release()).toBe(false);
        // The old holder's release took nothing from the new one.
        expect(next.isHeld()).toBe(true);
        expect((await b.inspect(key))?.holders.map((h) => h.ownerId)).toEqual([next.ownerId]);
        if (b.capabilities.fencing !== 'none') expect(next.fencingToken! > lock.fencingToken!).toBe(true);
        expect(await next.release()).toBe(true);
      },
      ctx.caseTimeout(40_000),
    );

    const crash = harness.crashProvider;
    it.skipIf(crash === undefined)(
      `${crash === undefined ? '[skipped: needs harness.crashProvider] ' : ''}crashed client: its lock is freed by the backend and the next holder is fenced above it`,
      async () => {
        const [a, b] = [await ctx.provider(), await ctx.provider()];
        const key = ctx.key('crashed');
        const lock = await a.acquire(key);
        await crash!(a);
        const next = await b.acquire(key, { waitMs: ctx.bound(60_000) });
        expect(next.acquiredAt).toBeGreaterThanOrEqual(lock.validUntil);
        if (b.capabilities.fencing !== 'none') expect(next.fencingToken! > lock.fencingToken!).toBe(true);
        await next.release();
      },
      ctx.caseTimeout(60_000),
    );
  });
}
