import {
  MAX_DURATION_MS,
  MAX_ELECTION_VALUE_BYTES,
  MAX_KEY_BYTES,
  MAX_OBSERVE_POLL_MS,
  type LeaderHandle,
  type LeaderInfo,
  type LockProvider,
} from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { freezeThread, isPending, nextEvent, within, type SuiteContext } from '../context.js';

/** One step of an election history: a leader took office or left it, in the order seen. */
interface TermStep {
  readonly ownerId: string;
  readonly term: bigint | undefined;
  readonly enter: boolean;
}

/**
 * Reads an observation until `wanted` holds for a state, within `ms`, pushing every state read onto
 * `seen`. Throws when the observation ends first or the bound passes.
 */
export async function observeUntil(
  iterator: AsyncIterator<LeaderInfo | undefined>,
  seen: (LeaderInfo | undefined)[],
  wanted: (state: LeaderInfo | undefined) => boolean,
  ms: number,
  what: string,
): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    const result = await within(iterator.next(), Math.max(1, Math.ceil(deadline - performance.now())), `observe to report ${what}`);
    if (result.done === true) throw new Error(`the observation ended before it reported ${what}`);
    seen.push(result.value);
    if (wanted(result.value)) return;
  }
}

/** Each state reported differs from the one before it (a change of leader, term or value). */
function expectChanges(seen: readonly (LeaderInfo | undefined)[]): void {
  for (let index = 1; index < seen.length; index += 1) {
    const [before, after] = [seen[index - 1], seen[index]];
    const same = before === undefined || after === undefined ? before === after : before.term === after.term && before.value === after.value;
    expect(same, `state ${index} repeats the state before it`).toBe(false);
  }
}

const WRONG_TYPES: readonly [string, unknown][] = [
  ['a number', 1],
  ['undefined', undefined],
  ['null', null],
  ['an object', {}],
  ['a Buffer', Buffer.from('x')],
];

async function refusal(attempt: Promise<unknown> | (() => unknown)): Promise<unknown> {
  if (typeof attempt === 'function') {
    try {
      attempt();
    } catch (error) {
      return error;
    }
    return undefined;
  }
  return attempt.then(
    () => undefined,
    (error: unknown) => error,
  );
}

async function expectArgumentError(attempt: Promise<unknown> | (() => unknown), kind: 'TypeError' | 'RangeError', what: string): Promise<void> {
  const error = await refusal(attempt);
  expect(error, `${what} should have been refused`).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
  expect(error, what).toBeInstanceOf(kind === 'TypeError' ? TypeError : RangeError);
}

/**
 * Leader election, as `capabilities.election` declares it: one leader at a time, terms strictly
 * increasing, resign hands over, `leader()` and `observe` agree with the handles, a lost leadership
 * aborts the leader's signal, nothing left behind, bad input refused. A provider without elections
 * is checked for its refusal. Every wait is bounded by an event; nothing sleeps.
 */
export function registerElectionCases(ctx: SuiteContext): void {
  // How long an election step may take: a notification, a poll, or a handover between clients.
  const step = (): number => ctx.bound(5_000);
  const pollMs = 50;

  describe('election', () => {
    it('is refused with LOCK_UNSUPPORTED where capabilities.election is none, and kept apart from locks and semaphores otherwise', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const name = ctx.key('elect-namespace');
      if (a.capabilities.election === 'none') {
        await expect(a.campaign(name, { value: 'a' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await expect(a.tryCampaign(name, { value: 'a' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        await expect(a.leader(name)).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        expect(await refusal(() => a.observe(name))).toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        return;
      }
      // A lock (and a semaphore, where there are some) of the same name neither blocks nor is blocked.
      const lock = await a.acquire(name);
      const permit = a.capabilities.semaphore === 'none' ? undefined : await a.acquireSemaphore(name, { limit: 1 });
      const leader = await b.tryCampaign(name, { value: 'b' });
      expect(leader, 'leadership beside a held lock of the same name').toBeDefined();
      expect(await b.tryAcquire(name), 'the lock is still held').toBeUndefined();
      await lock.release();
      const again = await b.tryAcquire(name);
      expect(again, 'a lock beside a leader of the same name').toBeDefined();
      expect(await a.tryCampaign(name, { value: 'a' }), 'the election is still led').toBeUndefined();
      await Promise.all([leader?.resign(), permit?.release(), again?.release()]);
    });

    it('elects one leader at a time, within one provider and across providers, and leader() agrees with the handle', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.election === 'none') return;
      const name = ctx.key('elect-one');
      expect(await b.leader(name)).toBeUndefined();
      const acquired = nextEvent(a, 'acquired', (e) => e.key === name, step());
      const leader = await a.campaign(name, { value: 'leader-a', waitMs: step() });
      expect(leader).toMatchObject({ key: name, name, mode: 'leader', value: 'leader-a' });
      expect(leader.term).toBe(leader.fencingToken);
      expect(await acquired).toMatchObject({ mode: 'leader', ownerId: leader.ownerId });
      if (a.capabilities.fencing === 'none') expect(leader.term).toBeUndefined();
      else expect(typeof leader.term).toBe('bigint');
      expect(leader.isHeld()).toBe(true);
      expect(await a.tryCampaign(name, { value: 'same-provider' }), 'a second leader from the same provider').toBeUndefined();
      expect(await b.tryCampaign(name, { value: 'other-provider' }), 'a second leader from another provider').toBeUndefined();
      for (const provider of [a, b]) expect(await provider.leader(name)).toEqual({ name, value: 'leader-a', term: leader.term });
      expect(await leader.resign()).toBe(true);
      expect(await leader.resign()).toBe(false);
      expect(await b.leader(name)).toBeUndefined();
    });

    it('keeps one leader at a time and strictly increasing terms under concurrent campaigns (history-checked)', async () => {
      const { clients, rounds } = ctx.options.concurrency ?? { clients: 4, rounds: 10 };
      // Two campaigners per provider: the local line and the backend both take part.
      const providers = await Promise.all(Array.from({ length: Math.max(2, Math.ceil(clients / 2)) }, () => ctx.provider()));
      if (providers[0]!.capabilities.election === 'none') return;
      const name = ctx.key('elect-contention');
      const history: TermStep[] = [];
      const campaignRounds = Math.min(rounds, 5);
      const work = async (provider: LockProvider, campaigner: number): Promise<void> => {
        for (let round = 0; round < campaignRounds; round += 1) {
          const leader = await provider.campaign(name, { value: `c${campaigner}`, waitMs: ctx.bound(30_000) });
          history.push({ ownerId: leader.ownerId, term: leader.term, enter: true });
          // Lead a few turns, so that other campaigners try while this one leads.
          for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
          history.push({ ownerId: leader.ownerId, term: leader.term, enter: false });
          expect(await leader.resign()).toBe(true);
        }
      };
      const campaigners = providers.flatMap((provider, index) => [work(provider, index * 2), work(provider, index * 2 + 1)]);
      await within(Promise.all(campaigners), ctx.bound(60_000), 'every campaigner to finish its rounds');
      expect(history).toHaveLength(providers.length * 2 * campaignRounds * 2);
      let leading: TermStep | undefined;
      const terms: (bigint | undefined)[] = [];
      for (const entry of history) {
        if (entry.enter) {
          expect(leading, `${entry.ownerId} took office while ${leading?.ownerId ?? ''} led`).toBeUndefined();
          leading = entry;
          terms.push(entry.term);
        } else {
          leading = undefined;
        }
      }
      if (providers[0]!.capabilities.fencing === 'none') return;
      for (let index = 1; index < terms.length; index += 1) {
        expect(terms[index]! > terms[index - 1]!, `term ${index}: ${String(terms[index])} > ${String(terms[index - 1])}`).toBe(true);
      }
    }, ctx.caseTimeout(60_000));

    it('hands leadership to the next campaigner on resign, with a greater term', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.election === 'none') return;
      const name = ctx.key('elect-resign');
      const first = await a.campaign(name, { value: 'first', waitMs: step() });
      const queued = nextEvent(b, 'contended', (e) => e.key === name, step());
      const waiting = b.campaign(name, { value: 'second', waitMs: ctx.bound(10_000) });
      expect((await queued).mode).toBe('leader');
      expect(await isPending(waiting)).toBe(true);
      expect(await first.resign()).toBe(true);
      expect(first.isHeld()).toBe(false);
      expect(first.signal.aborted).toBe(true);
      const second = await within(waiting, step(), 'the waiting campaigner to be elected');
      expect(second.isHeld()).toBe(true);
      if (a.capabilities.fencing !== 'none') expect(second.term! > first.term!, `${String(second.term)} > ${String(first.term)}`).toBe(true);
      expect(await a.leader(name)).toEqual({ name, value: 'second', term: second.term });
      expect(await second.resign()).toBe(true);
    });

    it('observe reports the current leader, then each leader in term order, and ends on abort or close', async () => {
      const [a, b, watcher] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      if (a.capabilities.election === 'none') return;
      const name = ctx.key('elect-observe');
      const controller = new AbortController();
      const iterator = watcher.observe(name, { signal: controller.signal, pollMs })[Symbol.asyncIterator]();
      const seen: (LeaderInfo | undefined)[] = [];
      await observeUntil(iterator, seen, () => true, step(), 'the current state');
      expect(seen).toEqual([undefined]);
      const first = await a.campaign(name, { value: 'first', waitMs: step() });
      await observeUntil(iterator, seen, (state) => state?.value === 'first', step(), 'the first leader');
      const queued = nextEvent(b, 'contended', (e) => e.key === name, step());
      const waiting = b.campaign(name, { value: 'second', waitMs: ctx.bound(10_000) });
      await queued;
      await first.resign();
      const second = await within(waiting, step(), 'the second leader to be elected');
      await observeUntil(iterator, seen, (state) => state?.value === 'second', step(), 'the second leader');
      await second.resign();
      await observeUntil(iterator, seen, (state) => state === undefined, step(), 'no leader after the last resign');
      expectChanges(seen);
      expect(seen.find((state) => state?.value === 'first')).toEqual({ name, value: 'first', term: first.term });
      expect(seen.find((state) => state?.value === 'second')).toEqual({ name, value: 'second', term: second.term });
      const terms = seen.filter((state) => state !== undefined).map((state) => state.term);
      if (a.capabilities.fencing !== 'none') {
        for (let index = 1; index < terms.length; index += 1) expect(terms[index]! > terms[index - 1]!).toBe(true);
      }
      // Aborted while the consumer waits for the next change: the iteration ends, it does not throw.
      const pending = iterator.next();
      controller.abort(new Error('done observing'));
      expect(await within(pending, step(), 'the observation to end on abort')).toMatchObject({ done: true });
      // The provider's close ends an observation too.
      const closing = watcher.observe(name, { pollMs })[Symbol.asyncIterator]();
      expect(await within(closing.next(), step(), 'the current state')).toEqual({ done: false, value: undefined });
      const open = closing.next();
      await watcher.close();
      expect(await within(open, step(), 'the observation to end on close')).toMatchObject({ done: true });
    });

    it('a leader paused past its validity has lost leadership on resume (signal aborted), and the next leader has a greater term', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      if (a.capabilities.election === 'none') return;
      const { ttlMs, session } = await ctx.ttl();
      const name = ctx.key('elect-paused');
      const leader: LeaderHandle = await a.campaign(name, session ? { value: 'paused', waitMs: step() } : { value: 'paused', ttlMs, waitMs: step() });
      // Frozen for the TTL it campaigned with (not its reported validity, which a broken provider may inflate).
      freezeThread(ttlMs + ctx.bound(250));
      // Checked before any timer had a chance to run: the handle reads the clock itself.
      expect(leader.isHeld()).toBe(false);
      expect(leader.signal.aborted).toBe(true);
      expect(leader.signal.reason).toMatchObject({ code: 'LOCK_LOST', key: name });
      const next = await b.campaign(name, { value: 'next', waitMs: ctx.bound(30_000) });
      if (a.capabilities.fencing !== 'none') expect(next.term! > leader.term!).toBe(true);
      expect(await leader.resign()).toBe(false);
      expect(next.isHeld()).toBe(true);
      expect(await b.leader(name)).toEqual({ name, value: 'next', term: next.term });
      await next.resign();
    }, ctx.caseTimeout(40_000));

    it('leaves nothing behind when a campaign times out or is aborted', async () => {
      const [a, b, c] = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      if (a.capabilities.election === 'none') return;
      const name = ctx.key('elect-give-up');
      const leader = await a.campaign(name, { value: 'a', waitMs: step() });
      await expect(b.campaign(name, { value: 'timed-out', waitMs: ctx.bound(150) })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT', key: name });
      const controller = new AbortController();
      const queued = nextEvent(b, 'contended', (e) => e.key === name, step());
      const aborted = b.campaign(name, { value: 'aborted', signal: controller.signal });
      await queued;
      controller.abort(new Error('caller gave up'));
      await expect(aborted).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
      expect(await leader.resign()).toBe(true);
      // A candidacy left by either would be elected now, with nobody to lead.
      const next = await c.tryCampaign(name, { value: 'c' });
      expect(next, 'leadership right after the only leader resigned').toBeDefined();
      expect(await c.leader(name)).toMatchObject({ value: 'c' });
      await next?.resign();
    });

    it('refuses bad names, values and options with LOCK_INVALID_ARGUMENT before any I/O', async () => {
      const provider = await ctx.provider();
      await provider.close();
      const name = ctx.key('elect-bad-input');
      for (const [what, bad] of WRONG_TYPES) {
        await expectArgumentError(provider.campaign(bad as string, { value: 'v' }), 'TypeError', `name ${what}`);
        await expectArgumentError(provider.tryCampaign(bad as string, { value: 'v' }), 'TypeError', `name ${what}`);
        await expectArgumentError(provider.leader(bad as string), 'TypeError', `name ${what}`);
        await expectArgumentError(() => provider.observe(bad as string), 'TypeError', `name ${what}`);
        if (bad !== undefined) await expectArgumentError(provider.campaign(name, { value: bad as string }), 'TypeError', `value ${what}`);
      }
      for (const bad of ['', '\uD800', 'x'.repeat(MAX_KEY_BYTES + 1)]) {
        await expectArgumentError(provider.campaign(bad, { value: 'v' }), 'RangeError', `name ${JSON.stringify(bad.slice(0, 8))}`);
        await expectArgumentError(() => provider.observe(bad), 'RangeError', `name ${JSON.stringify(bad.slice(0, 8))}`);
      }
      await expectArgumentError(provider.campaign(name, {} as never), 'TypeError', 'a missing value');
      await expectArgumentError(provider.campaign(name, undefined as never), 'TypeError', 'missing options');
      for (const bad of ['x'.repeat(MAX_ELECTION_VALUE_BYTES + 1), 'é'.repeat(MAX_ELECTION_VALUE_BYTES / 2 + 1), 'a\uDC00b']) {
        await expectArgumentError(provider.tryCampaign(name, { value: bad }), 'RangeError', `value of ${bad.length} characters`);
      }
      for (const option of [{ mode: 'shared' }, { metadata: 'm' }, { limit: 2 }, { unknown: 1 }]) {
        await expectArgumentError(provider.campaign(name, { value: 'v', ...option } as never), 'TypeError', `option ${Object.keys(option)[0]}`);
      }
      await expectArgumentError(provider.tryCampaign(name, { value: 'v', waitMs: 10 } as never), 'TypeError', 'waitMs of tryCampaign');
      // A valid campaign is checked against the capabilities next, and its lock options after that.
      if (provider.capabilities.election !== 'none') {
        await expectArgumentError(provider.campaign(name, { value: 'v', waitMs: -1 }), 'RangeError', 'a negative waitMs');
        await expectArgumentError(provider.campaign(name, { value: 'v', maxHoldMs: MAX_DURATION_MS + 1 }), 'RangeError', 'maxHoldMs above 2^31-1');
        await expectArgumentError(provider.campaign(name, { value: 'v', signal: 'abort' } as never), 'TypeError', 'a signal that is not an AbortSignal');
      }
      for (const [bad, kind] of [[0, 'RangeError'], [1, 'RangeError'], [Number.NaN, 'RangeError'], [MAX_OBSERVE_POLL_MS + 1, 'RangeError'], ['100', 'TypeError']] as const) {
        await expectArgumentError(() => provider.observe(name, { pollMs: bad as number }), kind, `pollMs ${String(bad)}`);
      }
      await expectArgumentError(() => provider.observe(name, { waitMs: 10 } as never), 'TypeError', 'an unknown observe option');
      // Valid input is refused next for what the provider is: without elections, or closed.
      const error = await refusal(provider.campaign(name, { value: '' }));
      expect(error).toMatchObject({ code: provider.capabilities.election === 'none' ? 'LOCK_UNSUPPORTED' : 'LOCK_BACKEND_UNAVAILABLE' });
    });
  });
}
