import { MAX_SEMAPHORE_LIMIT, monotonicNow, type LockProvider, type SemaphoreHandle } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { abortedWithin, isPending, nextEvent, within, type SuiteContext } from '../context.js';

/** One step of a semaphore history: a holder entered (its permits) or left, in the order seen. */
interface HistoryStep {
  readonly ownerId: string;
  readonly delta: number;
}

/**
 * The most permits held at once in a history of enters and leaves. A holder records its enter after
 * its grant and its leave before its release, so the count can only be lower than the backend's.
 */
function mostHeldAtOnce(history: readonly HistoryStep[]): number {
  let held = 0;
  let most = 0;
  for (const step of history) {
    held += step.delta;
    most = Math.max(most, held);
  }
  return most;
}

const BAD_LIMITS: readonly [string, unknown, 'TypeError' | 'RangeError'][] = [
  ['missing', undefined, 'TypeError'],
  ['a string', '2', 'TypeError'],
  ['a bigint', 2n, 'TypeError'],
  ['0', 0, 'RangeError'],
  ['negative', -1, 'RangeError'],
  ['a fraction', 1.5, 'RangeError'],
  ['NaN', Number.NaN, 'RangeError'],
  ['Infinity', Number.POSITIVE_INFINITY, 'RangeError'],
  ['above MAX_SEMAPHORE_LIMIT', MAX_SEMAPHORE_LIMIT + 1, 'RangeError'],
];

/**
 * Counting semaphores, as `capabilities.semaphore` declares them: at most `limit` permits held,
 * tokens increasing per key, one agreed limit, waiting, expiry, extension, clean-up and, where
 * declared, several permits at once. A provider without semaphores is checked for its refusal.
 */
export function registerSemaphoreCases(ctx: SuiteContext): void {
  const harness = ctx.options.harness ?? {};
  // The contended cases take every permit of a small semaphore: enough to exceed it with a spare waiter.
  const limit = 2;

  describe('semaphore', () => {
    it('is refused with LOCK_UNSUPPORTED where capabilities.semaphore is none, and left apart from locks otherwise', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('sem-namespace');
      if (a.capabilities.semaphore === 'none') {
        await expect(a.acquireSemaphore(key, { limit })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await expect(a.tryAcquireSemaphore(key, { limit })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await expect(a.inspectSemaphore(key)).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        const lock = await b.tryAcquire(key);
        expect(lock).toBeDefined();
        await lock?.release();
        return;
      }
      // A lock and a semaphore on the same key are independent, whichever comes first.
      const lock = await a.acquire(key);
      const permit = await b.tryAcquireSemaphore(key, { limit: 1 });
      expect(permit, 'a semaphore beside a held lock of the same key').toBeDefined();
      expect(await b.tryAcquire(key)).toBeUndefined();
      await lock.release();
      const again = await b.tryAcquire(key);
      expect(again, 'a lock beside a held semaphore of the same key').toBeDefined();
      expect(await a.tryAcquireSemaphore(key, { limit: 1 })).toBeUndefined();
      await Promise.all([permit?.release(), again?.release()]);
    });

    it('grants at most limit permits to holders from several providers, and shows them in inspectSemaphore', async () => {
      const providers = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      if (providers[0]!.capabilities.semaphore === 'none') return;
      const key = ctx.key('sem-limit');
      const acquired = nextEvent(providers[0]!, 'acquired', (e) => e.key === key, ctx.bound(5_000));
      const held: SemaphoreHandle[] = [];
      for (let index = 0; index < limit; index += 1) {
        const handle = await providers[index]!.tryAcquireSemaphore(key, { limit });
        expect(handle, `permit ${index + 1} of ${limit}`).toBeDefined();
        held.push(handle!);
      }
      expect(await acquired).toMatchObject({ mode: 'semaphore', limit, permits: 1, ownerId: held[0]!.ownerId });
      for (const handle of held) {
        expect(handle).toMatchObject({ key, mode: 'semaphore', limit, permits: 1 });
        expect(handle.isHeld()).toBe(true);
      }
      expect(await providers[2]!.tryAcquireSemaphore(key, { limit }), `a permit beyond the limit of ${limit}`).toBeUndefined();
      const info = await providers[2]!.inspectSemaphore(key);
      expect(info?.limit).toBe(limit);
      expect(info?.holders.map((h) => h.ownerId).sort()).toEqual(held.map((h) => h.ownerId).sort());
      expect(info?.holders.every((h) => h.mode === 'semaphore' && h.permits === 1)).toBe(true);
      for (const handle of held) expect(await handle.release()).toBe(true);
      expect(await providers[2]!.inspectSemaphore(key)).toBeUndefined();
    });

    it('never lets more than limit holders in under concurrent contention (history-checked)', async () => {
      const { clients, rounds } = ctx.options.concurrency ?? { clients: 4, rounds: 10 };
      const providers = await Promise.all(Array.from({ length: Math.max(clients, limit + 2) }, () => ctx.provider()));
      if (providers[0]!.capabilities.semaphore === 'none') return;
      const key = ctx.key('sem-contention');
      const history: HistoryStep[] = [];
      const tokens: bigint[] = [];
      const work = async (provider: LockProvider): Promise<void> => {
        for (let round = 0; round < rounds; round += 1) {
          const handle = await provider.acquireSemaphore(key, { limit, waitMs: ctx.bound(30_000) });
          history.push({ ownerId: handle.ownerId, delta: handle.permits });
          if (handle.fencingToken !== undefined) tokens.push(handle.fencingToken);
          // Stay a few turns, so that holders of different providers overlap.
          for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
          history.push({ ownerId: handle.ownerId, delta: -handle.permits });
          expect(await handle.release()).toBe(true);
        }
      };
      await within(Promise.all(providers.map(work)), ctx.bound(120_000), 'every client to finish its rounds');
      expect(history).toHaveLength(providers.length * rounds * 2);
      expect(mostHeldAtOnce(history), `permits held at once with limit ${limit}`).toBeLessThanOrEqual(limit);
      if (providers[0]!.capabilities.fencing !== 'none') expect(new Set(tokens).size).toBe(tokens.length);
    }, ctx.caseTimeout(120_000));

    it('gives every permit of a key a strictly greater token, across providers and overlapping holders (or none with fencing none)', async () => {
      const providers = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      if (providers[0]!.capabilities.semaphore === 'none') return;
      const key = ctx.key('sem-tokens');
      const tokens: (bigint | undefined)[] = [];
      const open: SemaphoreHandle[] = [];
      for (let round = 0; round < 9; round += 1) {
        const handle = await providers[round % providers.length]!.acquireSemaphore(key, { limit, waitMs: ctx.bound(10_000) });
        tokens.push(handle.fencingToken);
        open.push(handle);
        // One holder always stays while the next is granted: tokens must rise across live holders too.
        if (open.length === limit) expect(await open.shift()!.release()).toBe(true);
      }
      await Promise.all(open.map((handle) => handle.release()));
      if (providers[0]!.capabilities.fencing === 'none') {
        expect(tokens.every((token) => token === undefined)).toBe(true);
        return;
      }
      for (let index = 1; index < tokens.length; index += 1) {
        const [before, after] = [tokens[index - 1], tokens[index]];
        expect(typeof after).toBe('bigint');
        expect(after! > before!, `token ${index}: ${String(after)} > ${String(before)}`).toBe(true);
      }
    });

    it('refuses another limit with LOCK_LIMIT_MISMATCH while held, and takes the next acquirer\'s limit once empty', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.semaphore === 'none') return;
      const key = ctx.key('sem-mismatch');
      const holder = await a.acquireSemaphore(key, { limit });
      // Both run at once (a single try takes no place in the local line) and either may be refused
      // first: each is caught as it starts, so the later one's refusal is never an unhandled rejection.
      for (const refusal of [
        b.tryAcquireSemaphore(key, { limit: limit + 1 }).catch((e: unknown) => e),
        b.acquireSemaphore(key, { limit: 1, waitMs: ctx.bound(2_000) }).catch((e: unknown) => e),
      ]) {
        const error: unknown = await refusal;
        expect(error).toMatchObject({ code: 'LOCK_LIMIT_MISMATCH', key });
        expect(String((error as Error).message)).toContain(String(limit));
      }
      expect((await b.inspectSemaphore(key))?.holders.map((h) => h.ownerId)).toEqual([holder.ownerId]);
      // The refused calls left nothing behind: the second permit of the agreed limit is free.
      const second = await b.tryAcquireSemaphore(key, { limit });
      expect(second).toBeDefined();
      await Promise.all([holder.release(), second?.release()]);
      const other = await b.tryAcquireSemaphore(key, { limit: limit + 1 });
      expect(other?.limit).toBe(limit + 1);
      await other?.release();
    });

    it('hands a released permit to a waiting acquirer', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.semaphore === 'none') return;
      const key = ctx.key('sem-wait');
      const held = [await a.acquireSemaphore(key, { limit }), await a.acquireSemaphore(key, { limit })];
      const queued = nextEvent(b, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const waiting = b.acquireSemaphore(key, { limit, waitMs: ctx.bound(10_000) });
      expect((await queued).mode).toBe('semaphore');
      expect(await isPending(waiting)).toBe(true);
      expect(await held[0]!.release()).toBe(true);
      const next = await within(waiting, ctx.bound(10_000), 'the waiter to get the released permit');
      expect(next.isHeld()).toBe(true);
      if (a.capabilities.fencing !== 'none') expect(next.fencingToken! > held[1]!.fencingToken!).toBe(true);
      await Promise.all([held[1]!.release(), next.release()]);
    });

    it('frees the permit of an abandoned holder by expiry, and signals its loss', async ({ skip }) => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.semaphore === 'none') return;
      const { ttlMs, session } = await ctx.ttl();
      const key = ctx.key('sem-expiry');
      if (session) {
        if (harness.crashProvider === undefined) return skip('session provider: needs harness.crashProvider');
        const abandoned = await a.acquireSemaphore(key, { limit: 1 });
        await harness.crashProvider(a);
        const next = await b.acquireSemaphore(key, { limit: 1, waitMs: ctx.bound(ttlMs * 3 + 5_000) });
        expect(monotonicNow()).toBeGreaterThanOrEqual(abandoned.validUntil);
        await next.release();
        return;
      }
      const abandoned = await a.acquireSemaphore(key, { limit: 1, ttlMs, autoExtend: false });
      const next = await b.acquireSemaphore(key, { limit: 1, waitMs: ctx.bound(ttlMs * 3 + 5_000) });
      expect(next.acquiredAt).toBeGreaterThanOrEqual(abandoned.validUntil);
      expect(abandoned.isHeld()).toBe(false);
      if (a.capabilities.lossDetection) {
        expect(await abortedWithin(abandoned.signal, ctx.bound(1_000), 'the loss signal')).toMatchObject({ code: 'LOCK_LOST', key });
      }
      if (a.capabilities.fencing !== 'none') expect(next.fencingToken! > abandoned.fencingToken!).toBe(true);
      expect(await abandoned.release()).toBe(false);
      expect((await b.inspectSemaphore(key))?.holders.map((h) => h.ownerId)).toEqual([next.ownerId]);
      await next.release();
    }, ctx.caseTimeout(20_000));

    it('extend prolongs held permits past their first TTL (or rejects with LOCK_UNSUPPORTED)', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.semaphore === 'none') return;
      const { ttlMs, session } = await ctx.ttl();
      const key = ctx.key('sem-extend');
      const handle = await a.acquireSemaphore(key, session ? { limit: 1 } : { limit: 1, ttlMs, autoExtend: false });
      if (!a.capabilities.extend) {
        await expect(handle.extend()).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await handle.release();
        return;
      }
      const first = handle.validUntil;
      if (session) await handle.extend();
      else await handle.extend(ttlMs * 3);
      expect(handle.validUntil).toBeGreaterThan(first);
      if (!session) {
        // Past the first TTL, the permit is still held and still refused to others.
        const waited = b.acquireSemaphore(key, { limit: 1, waitMs: ttlMs * 2 });
        await expect(waited).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
        expect(handle.isHeld()).toBe(true);
      }
      expect(await handle.release()).toBe(true);
    }, ctx.caseTimeout(10_000));

    it('leaves nothing behind when a waiter times out or is aborted', async () => {
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      if (a.capabilities.semaphore === 'none') return;
      const key = ctx.key('sem-give-up');
      const holder = await a.acquireSemaphore(key, { limit: 1 });
      await expect(b.acquireSemaphore(key, { limit: 1, waitMs: ctx.bound(150) })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT', key });
      const controller = new AbortController();
      const queued = nextEvent(b, 'contended', (e) => e.key === key, ctx.bound(5_000));
      const aborted = b.acquireSemaphore(key, { limit: 1, signal: controller.signal, waitMs: ctx.bound(10_000) });
      await queued;
      controller.abort(new Error('caller gave up'));
      await expect(aborted).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
      expect(await holder.release()).toBe(true);
      // A queued entry left by either waiter would hold this try back.
      const next = await c.tryAcquireSemaphore(key, { limit: 1 });
      expect(next).toBeDefined();
      await next?.release();
    });

    it('takes several permits at once, all or nothing, where capabilities.semaphore is multi-permit (else LOCK_UNSUPPORTED)', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const support = a.capabilities.semaphore;
      if (support === 'none') return;
      const key = ctx.key('sem-multi');
      if (support === 'single-permit') {
        await expect(a.acquireSemaphore(key, { limit: 3, permits: 2 })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        return;
      }
      const two = await a.acquireSemaphore(key, { limit: 3, permits: 2 });
      expect(two.permits).toBe(2);
      // Two more do not fit beside them: none is taken, not even the free one.
      expect(await b.tryAcquireSemaphore(key, { limit: 3, permits: 2 })).toBeUndefined();
      const info = await b.inspectSemaphore(key);
      expect(info?.holders.map((h) => [h.ownerId, h.permits])).toEqual([[two.ownerId, 2]]);
      const one = await b.tryAcquireSemaphore(key, { limit: 3 });
      expect(one, 'the one free permit').toBeDefined();
      expect(await b.tryAcquireSemaphore(key, { limit: 3 })).toBeUndefined();
      await Promise.all([two.release(), one?.release()]);
      const all = await b.tryAcquireSemaphore(key, { limit: 3, permits: 3 });
      expect(all?.permits).toBe(3);
      await all?.release();
    });

    it('refuses bad limits and permits with LOCK_INVALID_ARGUMENT before any I/O', async () => {
      const provider = await ctx.provider();
      await provider.close();
      const key = ctx.key('sem-bad-input');
      for (const [what, value, kind] of BAD_LIMITS) {
        for (const attempt of [provider.acquireSemaphore(key, { limit: value } as never), provider.tryAcquireSemaphore(key, { limit: value } as never)]) {
          const error: unknown = await attempt.catch((e: unknown) => e);
          expect(error, `limit ${what}`).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
          expect(error, `limit ${what}`).toBeInstanceOf(kind === 'TypeError' ? TypeError : RangeError);
        }
      }
      for (const [permits, kind] of [[0, RangeError], [limit + 1, RangeError], [1.5, RangeError], ['1', TypeError]] as const) {
        const error: unknown = await provider.acquireSemaphore(key, { limit, permits: permits as number }).catch((e: unknown) => e);
        expect(error, `permits ${String(permits)}`).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
        expect(error, `permits ${String(permits)}`).toBeInstanceOf(kind);
      }
      await expect(provider.acquireSemaphore(key, { limit, mode: 'shared' } as never)).rejects.toBeInstanceOf(TypeError);
      await expect(provider.tryAcquireSemaphore(key, { limit, waitMs: 10 } as never)).rejects.toBeInstanceOf(TypeError);
      await expect(provider.acquire(key, { limit } as never)).rejects.toBeInstanceOf(TypeError);
      await expect(provider.acquireSemaphore('', { limit })).rejects.toBeInstanceOf(RangeError);
      // Valid semaphore options are checked against the capabilities next; the lock options after them.
      const ttlRefusal = provider.capabilities.semaphore === 'none' || provider.capabilities.expiry === 'session' ? 'LOCK_UNSUPPORTED' : 'LOCK_INVALID_ARGUMENT';
      await expect(provider.acquireSemaphore(key, { limit, ttlMs: -1 })).rejects.toMatchObject({ code: ttlRefusal });
    });
  });
}
