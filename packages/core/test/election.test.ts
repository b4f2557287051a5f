import { afterEach, describe, expect, it } from 'vitest';
import {
  BaseLockProvider,
  LockError,
  LockErrorCode,
  MAX_ELECTION_VALUE_BYTES,
  MAX_OBSERVE_POLL_MS,
  MemoryElections,
  MemoryLockProvider,
  MemoryLockStore,
  monotonicNow,
  normalizeCapabilities,
  type BackendCampaignRequest,
  type ElectionSupport,
  type LeaderInfo,
  type LockBackend,
  type LockEventMap,
  type LockProvider,
} from '../src/adapter.js';

const providers: LockProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((provider) => provider.close()));
});

function memory(store = new MemoryLockStore(), defaultWaitMs?: number): MemoryLockProvider {
  const provider = new MemoryLockProvider({ store, ...(defaultWaitMs === undefined ? {} : { defaultWaitMs }) });
  providers.push(provider);
  return provider;
}

/** Settles `promise` within `ms`, or rejects naming what was awaited (no test waits unbounded). */
function within<T>(promise: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function nextEvent<E extends keyof LockEventMap>(provider: LockProvider, event: E, predicate: (payload: LockEventMap[E]) => boolean = () => true): Promise<LockEventMap[E]> {
  let off = (): void => undefined;
  const seen = new Promise<LockEventMap[E]>((resolve) => {
    off = provider.on(event, (payload) => {
      if (predicate(payload)) resolve(payload);
    });
  });
  return within(seen, `${event} event`).finally(() => off());
}

async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol('pending');
  const winner = await Promise.race([promise.then(() => undefined, () => undefined), new Promise((r) => setImmediate(() => r(marker)))]);
  return winner === marker;
}

/** The next value of an observation, within a bound. */
async function next(iterator: AsyncIterator<LeaderInfo | undefined>, what: string): Promise<IteratorResult<LeaderInfo | undefined>> {
  return within(iterator.next(), what);
}

/** A backend with the given election support whose calls must never be reached. */
function unreachableBackend(election: ElectionSupport): LockBackend {
  const never = (): Promise<never> => Promise.reject(new Error('validation should have refused this call before any I/O'));
  return {
    name: `unreachable-${election}`,
    capabilities: normalizeCapabilities({ fencing: 'per-key', extend: true, election }),
    acquire: never,
    inspect: never,
    ...(election === 'none'
      ? {}
      : { campaign: (_request: BackendCampaignRequest) => never(), leader: never, watchLeader: (_name: string) => never() }),
    close: async () => undefined,
  };
}

describe('leader election on MemoryLockProvider', () => {
  it('elects one leader at a time, hands leadership to the next campaigner on resign, with a greater term', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const acquired = nextEvent(a, 'acquired', (e) => e.key === 'scheduler');
    const first = await a.campaign('scheduler', { value: 'host-a' });
    expect(first).toMatchObject({ key: 'scheduler', name: 'scheduler', mode: 'leader', value: 'host-a' });
    expect(typeof first.term).toBe('bigint');
    expect(first.term).toBe(first.fencingToken);
    expect(first.isHeld()).toBe(true);
    expect(await acquired).toMatchObject({ mode: 'leader', ownerId: first.ownerId, fencingToken: first.term });
    expect(await a.leader('scheduler')).toEqual({ name: 'scheduler', value: 'host-a', term: first.term });
    // Nobody else leads meanwhile, from this provider or another.
    expect(await a.tryCampaign('scheduler', { value: 'host-a2' })).toBeUndefined();
    expect(await b.tryCampaign('scheduler', { value: 'host-b' })).toBeUndefined();
    const waiting = b.campaign('scheduler', { value: 'host-b' });
    expect(await isPending(waiting)).toBe(true);
    expect(await first.resign()).toBe(true);
    expect(first.signal.aborted).toBe(true);
    expect(first.signal.reason).toMatchObject({ code: 'LOCK_NOT_HELD' });
    const second = await within(waiting, 'the waiting campaigner to be elected');
    expect(second.term! > first.term!).toBe(true);
    expect(await a.leader('scheduler')).toEqual({ name: 'scheduler', value: 'host-b', term: second.term });
    // Resigning twice is harmless; the old leader's resign takes nothing from the new one.
    expect(await first.resign()).toBe(false);
    expect(second.isHeld()).toBe(true);
    await second[Symbol.asyncDispose]();
    expect(await b.leader('scheduler')).toBeUndefined();
    expect(MemoryElections.of(store).size).toBe(0);
  });

  it('keeps elections apart from locks and semaphores of the same name', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const lock = await a.acquire('name');
    const permit = await a.acquireSemaphore('name', { limit: 1 });
    const leader = await b.tryCampaign('name', { value: 'v' });
    expect(leader, 'leadership beside a held lock and semaphore of the same name').toBeDefined();
    expect(await b.tryAcquire('name')).toBeUndefined();
    await lock.release();
    expect(await b.tryCampaign('name', { value: 'w' })).toBeUndefined();
    const again = await b.tryAcquire('name');
    expect(again).toBeDefined();
    await Promise.all([leader?.release(), permit.release(), again?.release()]);
  });

  it('sends one campaigner per name and provider to the backend; the others wait in the local line', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const leader = await a.campaign('line', { value: 'a' });
    const contended = nextEvent(b, 'contended', (e) => e.key === 'line' && e.mode === 'leader');
    const waiters = [b.campaign('line', { value: 'b1' }), b.campaign('line', { value: 'b2' }), b.campaign('line', { value: 'b3' })];
    await contended;
    expect(MemoryElections.of(store).waiting('line')).toBe(1);
    await leader.resign();
    const terms: bigint[] = [leader.term!];
    for (const [index, waiting] of waiters.entries()) {
      const elected = await within(waiting, `campaigner b${index + 1}`);
      expect(elected.value).toBe(`b${index + 1}`);
      terms.push(elected.term!);
      await elected.resign();
    }
    for (let index = 1; index < terms.length; index += 1) expect(terms[index]! > terms[index - 1]!).toBe(true);
    expect(MemoryElections.of(store).size).toBe(0);
  });

  it('waits without a time bound by default (not the provider\'s defaultWaitMs), until aborted or closed', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store, 1)];
    const leader = await a.campaign('patient', { value: 'a' });
    await a.acquire('busy');
    const controller = new AbortController();
    const waiting = b.campaign('patient', { value: 'b', signal: controller.signal });
    // A lock acquire on the same provider times out by its defaultWaitMs; the campaign still waits.
    const timedOut = nextEvent(b, 'timeout', (e) => e.key === 'busy');
    await expect(b.acquire('busy')).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    await timedOut;
    expect(await isPending(waiting)).toBe(true);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toMatchObject({ code: 'LOCK_ABORTED', key: 'patient' });
    // A finite waitMs times out as for a lock.
    await expect(b.campaign('patient', { value: 'b', waitMs: 5 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    // Closing the provider ends a campaign with no signal.
    const queued = nextEvent(b, 'contended', (e) => e.key === 'patient');
    const forever = b.campaign('patient', { value: 'b' });
    await queued;
    await b.close();
    await expect(forever).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    expect(MemoryElections.of(store).waiting('patient')).toBe(0);
    expect(leader.isHeld()).toBe(true);
    await leader.resign();
  });

  it('aborts a leader\'s signal when leadership is lost (deleted, expired, held past maxHoldMs), and elects the next', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const elections = MemoryElections.of(store);
    const deleted = await a.campaign('lost', { value: 'a' });
    const queued = nextEvent(b, 'contended', (e) => e.key === 'lost');
    const next = b.campaign('lost', { value: 'b' });
    await queued;
    expect(elections.deleteLeader('lost')).toBe(1);
    expect(deleted.signal.aborted).toBe(true);
    expect(deleted.signal.reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over', key: 'lost' });
    const successor = await within(next, 'the next campaigner after the deletion');
    expect(successor.term! > deleted.term!).toBe(true);
    expect(await deleted.resign()).toBe(false);
    expect(await b.leader('lost')).toMatchObject({ value: 'b', term: successor.term });
    await successor.resign();

    const expiring = await a.campaign('lost', { value: 'a', ttlMs: 30, autoExtend: false });
    const expired = await within(new Promise((resolve) => expiring.signal.addEventListener('abort', () => resolve(expiring.signal.reason))), 'the expiry');
    expect(expired).toMatchObject({ code: 'LOCK_LOST', reason: 'expired' });
    expect(monotonicNow()).toBeGreaterThanOrEqual(expiring.validUntil);
    expect(await b.leader('lost')).toBeUndefined();

    const bounded = await a.campaign('lost', { value: 'a', maxHoldMs: 20 });
    const reason = await within(new Promise((resolve) => bounded.signal.addEventListener('abort', () => resolve(bounded.signal.reason))), 'the hold bound');
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'max-hold' });
    const after = await within(b.campaign('lost', { value: 'b' }), 'leadership after the hold bound');
    expect(after.term! > bounded.term!).toBe(true);
    await after.resign();
  });

  it('observes the current leader first, then each change in order, and ends on abort', async () => {
    const store = new MemoryLockStore();
    const [a, b, watcher] = [memory(store), memory(store), memory(store)];
    const controller = new AbortController();
    const iterator = watcher.observe('obs', { signal: controller.signal })[Symbol.asyncIterator]();
    expect(await next(iterator, 'the first state')).toEqual({ done: false, value: undefined });
    const first = await a.campaign('obs', { value: 'a' });
    expect(await next(iterator, 'the first leader')).toEqual({ done: false, value: { name: 'obs', value: 'a', term: first.term } });
    const queued = nextEvent(b, 'contended', (e) => e.key === 'obs');
    const waiting = b.campaign('obs', { value: 'b' });
    await queued;
    await first.resign();
    const second = await waiting;
    expect(await next(iterator, 'the second leader')).toEqual({ done: false, value: { name: 'obs', value: 'b', term: second.term } });
    await second.resign();
    expect(await next(iterator, 'no leader')).toEqual({ done: false, value: undefined });
    // Abort while the consumer waits: the pending next() ends the iteration, and the watch is let go.
    const pending = iterator.next();
    controller.abort();
    expect(await within(pending, 'the end after abort')).toEqual({ done: true, value: undefined });
    expect(MemoryElections.of(store).watchers).toBe(0);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('coalesces changes for a slow consumer: it gets the latest state, not a backlog', async () => {
    const store = new MemoryLockStore();
    const [a, watcher] = [memory(store), memory(store)];
    const controller = new AbortController();
    const iterator = watcher.observe('slow', { signal: controller.signal })[Symbol.asyncIterator]();
    expect((await next(iterator, 'the first state')).value).toBeUndefined();
    let last;
    for (let round = 0; round < 50; round += 1) {
      const leader = await a.campaign('slow', { value: `v${round}` });
      if (round < 49) await leader.resign();
      last = leader;
    }
    expect(await next(iterator, 'the latest leader')).toEqual({ done: false, value: { name: 'slow', value: 'v49', term: last!.term } });
    expect(await isPending(iterator.next())).toBe(true);
    controller.abort();
    await last!.resign();
  });

  it('ends observations when the consumer breaks or the provider closes; an aborted signal yields nothing', async () => {
    const store = new MemoryLockStore();
    const [a, watcher] = [memory(store), memory(store)];
    const elections = MemoryElections.of(store);
    const leader = await a.campaign('end', { value: 'a' });
    for await (const state of watcher.observe('end')) {
      expect(state?.value).toBe('a');
      break;
    }
    expect(elections.watchers).toBe(0);
    const iterator = watcher.observe('end')[Symbol.asyncIterator]();
    expect((await next(iterator, 'the leader')).value?.term).toBe(leader.term);
    const pending = iterator.next();
    await watcher.close();
    expect(await within(pending, 'the end after close')).toEqual({ done: true, value: undefined });
    expect(elections.watchers).toBe(0);
    expect(() => watcher.observe('end')).toThrow(expect.objectContaining({ code: 'LOCK_BACKEND_UNAVAILABLE' }));
    const aborted = AbortSignal.abort();
    const states: unknown[] = [];
    for await (const state of a.observe('end', { signal: aborted })) states.push(state);
    expect(states).toEqual([]);
    await leader.resign();
  });

  it('refuses bad input with typed errors before any I/O', async () => {
    const provider = memory();
    await provider.close();
    for (const name of [1, undefined, null, {}, Buffer.from('n')]) {
      await expect(provider.campaign(name as never, { value: 'v' })).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT', argument: 'name' });
      await expect(provider.leader(name as never)).rejects.toBeInstanceOf(TypeError);
      expect(() => provider.observe(name as never)).toThrow(TypeError);
    }
    for (const name of ['', '\uD800', 'x'.repeat(513)]) {
      await expect(provider.tryCampaign(name, { value: 'v' })).rejects.toBeInstanceOf(RangeError);
      expect(() => provider.observe(name)).toThrow(RangeError);
    }
    for (const value of [undefined, 1, null, Buffer.from('v'), ['v']]) {
      await expect(provider.campaign('n', { value } as never)).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT', argument: 'options.value' });
      await expect(provider.campaign('n', { value } as never)).rejects.toBeInstanceOf(TypeError);
    }
    for (const value of ['x'.repeat(MAX_ELECTION_VALUE_BYTES + 1), 'é'.repeat(MAX_ELECTION_VALUE_BYTES / 2 + 1), 'a\uDC00']) {
      await expect(provider.tryCampaign('n', { value })).rejects.toBeInstanceOf(RangeError);
    }
    await expect(provider.campaign('n', undefined as never)).rejects.toBeInstanceOf(TypeError);
    await expect(provider.campaign('n', { value: 'v', mode: 'shared' } as never)).rejects.toMatchObject({ argument: 'options.mode' });
    await expect(provider.campaign('n', { value: 'v', metadata: 'm' } as never)).rejects.toMatchObject({ argument: 'options.metadata' });
    await expect(provider.campaign('n', { value: 'v', limit: 2 } as never)).rejects.toMatchObject({ argument: 'options.limit' });
    await expect(provider.tryCampaign('n', { value: 'v', waitMs: 10 } as never)).rejects.toMatchObject({ argument: 'options.waitMs' });
    await expect(provider.acquire('n', { value: 'v' } as never)).rejects.toMatchObject({ argument: 'options.value' });
    await expect(provider.campaign('n', { value: 'v', ttlMs: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(provider.campaign('n', { value: 'v', waitMs: -1 })).rejects.toBeInstanceOf(RangeError);
    await expect(provider.campaign('n', { value: 'v', autoExtend: 'yes' } as never)).rejects.toBeInstanceOf(TypeError);
    for (const [pollMs, kind] of [[0, RangeError], [9, RangeError], [MAX_OBSERVE_POLL_MS + 1, RangeError], [Number.NaN, RangeError], ['100', TypeError]] as const) {
      expect(() => provider.observe('n', { pollMs: pollMs as number }), `pollMs ${String(pollMs)}`).toThrow(kind);
    }
    expect(() => provider.observe('n', { signal: 'stop' } as never)).toThrow(TypeError);
    expect(() => provider.observe('n', { waitMs: 1 } as never)).toThrow(expect.objectContaining({ argument: 'options.waitMs' }));
    expect(() => provider.observe('n', 5 as never)).toThrow(TypeError);
    // Valid input reaches the closed-provider check, and only then.
    await expect(provider.campaign('n', { value: '' })).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    await expect(provider.campaign('n', { value: 'v', signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
  });

  it('accepts an empty value and odd names, each its own election', async () => {
    const store = new MemoryLockStore();
    const provider = memory(store);
    const names = ['__proto__', 'constructor', 'e\u0301', 'é', 'a/b'];
    const leaders = await Promise.all(names.map((name) => provider.campaign(name, { value: '' })));
    for (const [index, name] of names.entries()) expect(await provider.leader(name)).toEqual({ name, value: '', term: leaders[index]!.term });
    await Promise.all(leaders.map((leader) => leader.resign()));
    expect(MemoryElections.of(store).size).toBe(0);
  });
});

describe('leader election on other backends', () => {
  it('is refused with LOCK_UNSUPPORTED where capabilities.election is none, after the input checks', async () => {
    const none = new BaseLockProvider(unreachableBackend('none'));
    providers.push(none);
    await expect(none.campaign('k', { value: 'v' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    await expect(none.tryCampaign('k', { value: 'v' })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    await expect(none.leader('k')).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    expect(() => none.observe('k')).toThrow(expect.objectContaining({ code: 'LOCK_UNSUPPORTED' }));
    await expect(none.campaign('k', { value: 1 } as never)).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    expect(() => none.observe('k', { pollMs: 1 })).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
  });

  it('refuses a backend that declares elections without the methods to serve them', () => {
    const bare: LockBackend = { ...unreachableBackend('none'), capabilities: normalizeCapabilities({ fencing: 'none', election: 'polled' }) };
    expect(() => new BaseLockProvider(bare)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', argument: 'capabilities.election' }));
    const { watchLeader: _unused, ...withoutWatch } = unreachableBackend('notified');
    expect(() => new BaseLockProvider(withoutWatch)).toThrow(expect.objectContaining({ argument: 'capabilities.election' }));
    const polled = new BaseLockProvider({ ...withoutWatch, capabilities: normalizeCapabilities({ fencing: 'none', election: 'polled' }) });
    providers.push(polled);
    expect(polled.capabilities.election).toBe('polled');
  });

  it('observes a polled backend by reading every pollMs, retries failed reads, and stops at a refusal', async () => {
    let current: LeaderInfo | undefined;
    let reads = 0;
    let failing: Error | undefined;
    const changed: (() => void)[] = [];
    const backend: LockBackend = {
      ...unreachableBackend('none'),
      capabilities: normalizeCapabilities({ fencing: 'global', election: 'polled' }),
      campaign: () => Promise.reject(new Error('not used')),
      leader: async () => {
        reads += 1;
        changed.splice(0).forEach((wake) => wake());
        if (failing !== undefined) throw failing;
        return current;
      },
    };
    const provider = new BaseLockProvider(backend);
    providers.push(provider);
    // Resolves once the observer has read the leader again (after a change made by the test).
    const read = (): Promise<void> => within(new Promise<void>((resolve) => changed.push(resolve)), 'another read');
    const controller = new AbortController();
    const iterator = provider.observe('p', { signal: controller.signal, pollMs: 10 })[Symbol.asyncIterator]();
    expect((await next(iterator, 'the first state')).value).toBeUndefined();
    current = { name: 'ignored', value: 'a', term: 7n };
    // The backend's own name field is not trusted: the observation reports the name it follows.
    expect((await next(iterator, 'the polled leader')).value).toEqual({ name: 'p', value: 'a', term: 7n });
    // A new value in the same term is a change too; the same state read again is not.
    current = { name: 'p', value: 'a2', term: 7n };
    expect((await next(iterator, 'the new value')).value).toEqual({ name: 'p', value: 'a2', term: 7n });
    const quiet = iterator.next();
    await read();
    await read();
    expect(await isPending(quiet)).toBe(true);
    // A backend that cannot be reached is asked again; the observation goes on.
    failing = new Error('connection refused');
    const before = reads;
    await read();
    await read();
    expect(reads).toBeGreaterThan(before);
    failing = undefined;
    current = { name: 'p', value: 'b', term: 8n };
    expect((await within(quiet, 'the leader after the outage')).value).toEqual({ name: 'p', value: 'b', term: 8n });
    // A refusal is not retried: the iteration throws it.
    failing = new LockError(LockErrorCode.FORBIDDEN, 'no permission to read');
    await expect(within(iterator.next(), 'the refusal')).rejects.toMatchObject({ code: 'LOCK_FORBIDDEN' });
    controller.abort();
  });

  it('observes a notified backend through watchLeader: set up before the first read, retried when it fails, let go at the end', async () => {
    let current: LeaderInfo | undefined;
    const calls: string[] = [];
    let watchFailures = 1;
    let onChange: (() => void) | undefined;
    let watchSignal: AbortSignal | undefined;
    const backend: LockBackend = {
      ...unreachableBackend('none'),
      capabilities: normalizeCapabilities({ fencing: 'global', election: 'notified' }),
      campaign: () => Promise.reject(new Error('not used')),
      leader: async () => {
        calls.push('read');
        return current;
      },
      watchLeader: async (_name, changed, signal) => {
        calls.push('watch');
        if (watchFailures > 0) {
          watchFailures -= 1;
          throw new Error('connection reset');
        }
        onChange = changed;
        watchSignal = signal;
      },
    };
    const provider = new BaseLockProvider(backend);
    providers.push(provider);
    const controller = new AbortController();
    const iterator = provider.observe('n', { signal: controller.signal })[Symbol.asyncIterator]();
    expect((await next(iterator, 'the first state')).value).toBeUndefined();
    // The failed watch was tried again, and both came before the first read.
    expect(calls).toEqual(['watch', 'watch', 'read']);
    const pending = iterator.next();
    // A notification without a change costs a read and yields nothing.
    onChange!();
    await within(new Promise<void>((resolve) => setImmediate(resolve)), 'a turn');
    expect(calls.filter((call) => call === 'read')).toHaveLength(2);
    expect(await isPending(pending)).toBe(true);
    current = { name: 'n', value: 'a', term: 3n };
    onChange!();
    expect((await within(pending, 'the notified leader')).value).toEqual({ name: 'n', value: 'a', term: 3n });
    expect(watchSignal?.aborted).toBe(false);
    await iterator.return?.();
    expect(watchSignal?.aborted).toBe(true);
    controller.abort();
  });
});
