/**
 * Deliberately broken providers: each gets one part of the contract wrong, so the suite's own tests
 * can show that the suite catches it. They wrap a healthy MemoryLockProvider and break it on purpose.
 */
import { randomUUID } from 'node:crypto';
import {
  MAX_DURATION_MS,
  MemoryLockProvider,
  MemoryLockStore,
  type AcquireOptions,
  type AcquireSemaphoreOptions,
  type CampaignOptions,
  type LeaderHandle,
  type LeaderInfo,
  type LockEventListener,
  type LockEventMap,
  type LockHandle,
  type LockInfo,
  type LockProvider,
  type ObserveOptions,
  type SemaphoreHandle,
  type SemaphoreInfo,
  type TryAcquireOptions,
  type TryAcquireSemaphoreOptions,
  type TryCampaignOptions,
} from '@fencelock/core';

type HandleOverrides = Partial<Pick<LockHandle, 'key' | 'fencingToken' | 'signal' | 'isHeld' | 'release'>>;

/** A handle that delegates to `real` except for what `overrides` replaces. */
function delegate(real: LockHandle, overrides: HandleOverrides): LockHandle {
  const handle: LockHandle = {
    get key() {
      return overrides.key ?? real.key;
    },
    get mode() {
      return real.mode;
    },
    get ownerId() {
      return real.ownerId;
    },
    get fencingToken() {
      return 'fencingToken' in overrides ? overrides.fencingToken : real.fencingToken;
    },
    get acquiredAt() {
      return real.acquiredAt;
    },
    get validUntil() {
      return real.validUntil;
    },
    get signal() {
      return overrides.signal ?? real.signal;
    },
    get state() {
      return real.state;
    },
    isHeld: overrides.isHeld ?? (() => real.isHeld()),
    assertHeld: overrides.isHeld === undefined ? () => real.assertHeld() : () => undefined,
    extend: (ttlMs?: number) => real.extend(ttlMs),
    release: overrides.release ?? (() => real.release()),
    [Symbol.asyncDispose]: async () => {
      await handle.release();
    },
  };
  return handle;
}

/** A semaphore handle that delegates to `real`, with `limit` and what `overrides` replaces. */
function delegateSemaphore(real: SemaphoreHandle, overrides: HandleOverrides & { limit?: number }): SemaphoreHandle {
  const base = delegate(real, overrides);
  return Object.defineProperties(base, {
    mode: { get: () => real.mode },
    limit: { get: () => overrides.limit ?? real.limit },
    permits: { get: () => real.permits },
  }) as SemaphoreHandle;
}

/** A leader handle that delegates to `real`, with the name and term `overrides` gives. */
function delegateLeader(real: LeaderHandle, overrides: { name?: string; term?: bigint | undefined; release?: () => Promise<boolean> }): LeaderHandle {
  const base = delegate(real, { key: overrides.name ?? real.key, fencingToken: 'term' in overrides ? overrides.term : real.fencingToken, ...(overrides.release === undefined ? {} : { release: overrides.release }) });
  return Object.defineProperties(base, {
    mode: { get: () => real.mode },
    name: { get: () => base.key },
    value: { get: () => real.value },
    term: { get: () => base.fencingToken },
    resign: { value: () => base.release() },
  }) as LeaderHandle;
}

/** Hooks that break a {@link WrappedProvider}'s elections. */
interface ElectionHooks {
  /** The name the healthy provider is asked to campaign for. */
  map?: (name: string) => string;
  /** What the caller gets instead of the healthy handle. */
  wrap?: (handle: LeaderHandle, name: string) => LeaderHandle;
  /** What `leader` reports instead of the healthy answer. */
  leader?: (info: LeaderInfo | undefined) => LeaderInfo | undefined;
  /** What `observe` yields instead of the healthy states. */
  observe?: (states: AsyncIterable<LeaderInfo | undefined>) => AsyncIterable<LeaderInfo | undefined>;
}

/** Hooks that break a {@link WrappedProvider}'s semaphores. */
interface SemaphoreHooks {
  /** The key and limit the healthy provider is asked for. */
  map?: (key: string, limit: number) => { key: string; limit: number };
  /** What the caller gets instead of the healthy handle. */
  wrap?: (handle: SemaphoreHandle, key: string, limit: number) => SemaphoreHandle;
  /** What `inspectSemaphore` reports instead of the healthy answer. */
  inspect?: (info: SemaphoreInfo | undefined) => SemaphoreInfo | undefined;
}

/** A provider that delegates to a healthy memory provider, with hooks to break it. */
class WrappedProvider implements LockProvider {
  readonly #inner: MemoryLockProvider;
  readonly #mapKey: (key: string) => string;
  readonly #mapOptions: (options: AcquireOptions) => AcquireOptions;
  readonly #wrap: (handle: LockHandle, key: string) => LockHandle;
  readonly #semaphore: SemaphoreHooks;
  readonly #election: ElectionHooks;

  constructor(
    store: MemoryLockStore,
    hooks: {
      mapKey?: (key: string) => string;
      mapOptions?: (options: AcquireOptions) => AcquireOptions;
      wrap?: (handle: LockHandle, key: string) => LockHandle;
      semaphore?: SemaphoreHooks;
      election?: ElectionHooks;
    },
  ) {
    this.#inner = new MemoryLockProvider({ store });
    this.#semaphore = hooks.semaphore ?? {};
    this.#election = hooks.election ?? {};
    this.#mapKey = hooks.mapKey ?? ((key) => key);
    this.#mapOptions = hooks.mapOptions ?? ((options) => options);
    this.#wrap = hooks.wrap ?? ((handle) => handle);
  }

  get name(): string {
    return this.#inner.name;
  }
  get capabilities() {
    return this.#inner.capabilities;
  }
  get defaultTtlMs(): number {
    return this.#inner.defaultTtlMs;
  }
  async acquire(key: string, options: AcquireOptions = {}): Promise<LockHandle> {
    return this.#wrap(await this.#inner.acquire(this.#key(key), this.#mapOptions(options)), key);
  }
  async tryAcquire(key: string, options: TryAcquireOptions = {}): Promise<LockHandle | undefined> {
    const handle = await this.#inner.tryAcquire(this.#key(key), this.#mapOptions(options));
    return handle === undefined ? undefined : this.#wrap(handle, key);
  }
  async inspect(key: string): Promise<LockInfo | undefined> {
    return this.#inner.inspect(key);
  }
  async acquireSemaphore(key: string, options: AcquireSemaphoreOptions): Promise<SemaphoreHandle> {
    const [innerKey, innerOptions] = this.#mapSemaphore(key, options);
    return this.#wrapSemaphore(await this.#inner.acquireSemaphore(innerKey, innerOptions), key, options);
  }
  async tryAcquireSemaphore(key: string, options: TryAcquireSemaphoreOptions): Promise<SemaphoreHandle | undefined> {
    const [innerKey, innerOptions] = this.#mapSemaphore(key, options);
    const handle = await this.#inner.tryAcquireSemaphore(innerKey, innerOptions);
    return handle === undefined ? undefined : this.#wrapSemaphore(handle, key, options);
  }
  async inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    const info = await this.#inner.inspectSemaphore(key);
    return this.#semaphore.inspect === undefined ? info : this.#semaphore.inspect(info);
  }
  async campaign(name: string, options: CampaignOptions): Promise<LeaderHandle> {
    return this.#wrapLeader(await this.#inner.campaign(this.#electionName(name), options), name);
  }
  async tryCampaign(name: string, options: TryCampaignOptions): Promise<LeaderHandle | undefined> {
    const handle = await this.#inner.tryCampaign(this.#electionName(name), options);
    return handle === undefined ? undefined : this.#wrapLeader(handle, name);
  }
  async leader(name: string): Promise<LeaderInfo | undefined> {
    const info = await this.#inner.leader(name);
    return this.#election.leader === undefined ? info : this.#election.leader(info);
  }
  observe(name: string, options?: ObserveOptions): AsyncIterable<LeaderInfo | undefined> {
    const states = this.#inner.observe(name, options);
    return this.#election.observe === undefined ? states : this.#election.observe(states);
  }
  on<E extends keyof LockEventMap>(event: E, listener: LockEventListener<E>): () => void {
    return this.#inner.on(event, listener);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
  // Bad names reach the healthy provider untouched, so that its validation still answers.
  #electionName(name: string): string {
    const map = this.#election.map;
    return map === undefined || typeof name !== 'string' || name.length === 0 ? name : map(name);
  }
  #wrapLeader(handle: LeaderHandle, name: string): LeaderHandle {
    const wrap = this.#election.wrap;
    return wrap === undefined ? handle : wrap(handle, name);
  }
  // Bad input reaches the healthy provider untouched, so that its validation still answers.
  #mapSemaphore<O extends TryAcquireSemaphoreOptions>(key: string, options: O): [string, O] {
    const map = this.#semaphore.map;
    if (map === undefined || typeof key !== 'string' || key.length === 0 || !Number.isInteger(options?.limit)) return [key, options];
    const mapped = map(key, options.limit);
    return [mapped.key, { ...options, limit: mapped.limit }];
  }
  #wrapSemaphore(handle: SemaphoreHandle, key: string, options: TryAcquireSemaphoreOptions): SemaphoreHandle {
    const wrap = this.#semaphore.wrap;
    return wrap === undefined ? handle : wrap(handle, key, options.limit);
  }
  #key(key: string): string {
    // Validation must still happen on the user's key, so non-string keys reach the inner provider as they are.
    return typeof key === 'string' && key.length > 0 ? this.#mapKey(key) : key;
  }
}

/** Every acquisition gets a private key: two holders of one key at once. */
export function noMutualExclusion(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    mapKey: (key) => `${key}#${randomUUID()}`,
    wrap: (handle, key) => delegate(handle, { key }),
  });
}

/** Tokens go down instead of up. */
export function nonMonotonicTokens(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    wrap: (handle) => delegate(handle, { fencingToken: 1_000_000n - (handle.fencingToken ?? 0n) }),
  });
}

// Live handles per store, so a release from one provider can reach another provider's holder.
const liveHandles = new WeakMap<MemoryLockStore, Map<string, Set<LockHandle>>>();

/** Release deletes whoever holds the key, like a DEL without an owner check. */
export function releaseWithoutOwnerCheck(store: MemoryLockStore): LockProvider {
  const live = liveHandles.get(store) ?? new Map<string, Set<LockHandle>>();
  liveHandles.set(store, live);
  return new WrappedProvider(store, {
    wrap: (handle, key) => {
      const set = live.get(key) ?? new Set<LockHandle>();
      live.set(key, set);
      set.add(handle);
      return delegate(handle, {
        release: async () => {
          const holders = [...(live.get(key) ?? [])];
          live.delete(key);
          const released = await Promise.all(holders.map((h) => h.release()));
          return released.some(Boolean);
        },
      });
    },
  });
}

/** TTLs are ignored: an abandoned lock is never freed. */
export function neverExpires(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    mapOptions: (options) => ({ ...options, ttlMs: MAX_DURATION_MS, autoExtend: false }),
  });
}

/** The handle's signal never fires and the handle always claims to hold the lock until released. */
export function lostSignalNeverFired(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    wrap: (handle) => {
      let released = false;
      return delegate(handle, {
        signal: new AbortController().signal,
        isHeld: () => !released,
        release: () => {
          released = true;
          return handle.release();
        },
      });
    },
  });
}

/**
 * Claims to watch its lock record but does not: after the record is deleted behind its back, the
 * handle still reports the lock held until its validity runs out.
 */
export function deletionUnnoticed(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    wrap: (handle) => {
      const expiry = new AbortController();
      const timer = setTimeout(
        () => expiry.abort(handle.signal.aborted ? handle.signal.reason : new Error('expired')),
        Math.max(0, handle.validUntil - performance.now()),
      );
      timer.unref();
      let released = false;
      // The real signal is followed only for what is not a deletion: release, close, expiry.
      handle.signal.addEventListener('abort', () => {
        const reason: unknown = handle.signal.reason;
        if ((reason as { reason?: unknown } | undefined)?.reason !== 'taken-over') expiry.abort(reason);
      });
      return delegate(handle, {
        signal: expiry.signal,
        isHeld: () => !released && !expiry.signal.aborted,
        release: () => {
          released = true;
          clearTimeout(timer);
          return handle.release();
        },
      });
    },
  });
}

// The last handle granted per key and store, to tell when its validity has passed.
const lastGrant = new WeakMap<MemoryLockStore, Map<string, LockHandle>>();

/**
 * After a holder's validity has passed, every request that started before anyone looked at the key
 * again is granted (an expired holder swept in a way that loses the next grant: a double grant).
 */
export function doubleGrantAfterExpiry(store: MemoryLockStore): LockProvider {
  const last = lastGrant.get(store) ?? new Map<string, LockHandle>();
  lastGrant.set(store, last);
  const inner = new WrappedProvider(store, {});
  const record = (key: string, handle: LockHandle | undefined): LockHandle | undefined => {
    if (handle !== undefined) last.set(key, handle);
    return handle;
  };
  const provider: LockProvider = {
    get name() {
      return inner.name;
    },
    get capabilities() {
      return inner.capabilities;
    },
    get defaultTtlMs() {
      return inner.defaultTtlMs;
    },
    acquire: async (key, options) => record(key, await inner.acquire(key, options))!,
    tryAcquire: async (key, options) => {
      const seen = last.get(key);
      const stale = seen !== undefined && seen.validUntil <= performance.now();
      const handle = await inner.tryAcquire(key, options);
      if (handle !== undefined || !stale) return record(key, handle);
      const forged = await inner.tryAcquire(`${key}#${randomUUID()}`, options);
      return forged === undefined ? undefined : delegate(forged, { key });
    },
    inspect: (key) => inner.inspect(key),
    acquireSemaphore: (key, options) => inner.acquireSemaphore(key, options),
    tryAcquireSemaphore: (key, options) => inner.tryAcquireSemaphore(key, options),
    inspectSemaphore: (key) => inner.inspectSemaphore(key),
    campaign: (name, options) => inner.campaign(name, options),
    tryCampaign: (name, options) => inner.tryCampaign(name, options),
    leader: (name) => inner.leader(name),
    observe: (name, options) => inner.observe(name, options),
    on: (event, listener) => inner.on(event, listener),
    close: () => inner.close(),
    [Symbol.asyncDispose]: () => inner.close(),
  };
  return provider;
}

/** Grants one permit more than the limit: `limit + 1` holders at once, each told the limit asked for. */
export function semaphoreOverLimit(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    semaphore: {
      map: (key, limit) => ({ key, limit: limit + 1 }),
      wrap: (handle, key, limit) => delegateSemaphore(handle, { key, limit }),
      inspect: (info) => (info === undefined ? undefined : { ...info, limit: info.limit - 1 }),
    },
  });
}

/** Ignores a limit mismatch: each limit silently gets a semaphore of its own (a second limit). */
export function semaphoreLimitIgnored(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    semaphore: {
      map: (key, limit) => ({ key: `${key}#limit=${limit}`, limit }),
      wrap: (handle, key) => delegateSemaphore(handle, { key }),
    },
  });
}

/** Semaphore tokens go down instead of up (locks are left healthy). */
export function semaphoreTokensBackwards(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    semaphore: {
      wrap: (handle) => delegateSemaphore(handle, { fencingToken: 1_000_000n - (handle.fencingToken ?? 0n) }),
    },
  });
}

// The leaders of each name that a split-brain provider believes in, with the term they share.
const splitBrains = new WeakMap<MemoryLockStore, Map<string, { term: bigint | undefined; leaders: number }>>();

/**
 * Split brain: every campaigner is elected at once (each on a private election), and while one
 * leads, the others are told its term: two leaders in one term.
 */
export function electionTwoLeaders(store: MemoryLockStore): LockProvider {
  const terms = splitBrains.get(store) ?? new Map<string, { term: bigint | undefined; leaders: number }>();
  splitBrains.set(store, terms);
  return new WrappedProvider(store, {
    election: {
      map: (name) => `${name}#${randomUUID()}`,
      wrap: (handle, name) => {
        const shared = terms.get(name);
        const current = shared !== undefined && shared.leaders > 0 ? shared : { term: handle.term, leaders: 0 };
        current.leaders += 1;
        terms.set(name, current);
        let resigned = false;
        return delegateLeader(handle, {
          name,
          term: current.term,
          release: async () => {
            if (!resigned) current.leaders -= 1;
            resigned = true;
            return handle.release();
          },
        });
      },
    },
  });
}

/** Terms go down instead of up, in handles, in `leader` and in `observe` alike (locks are left healthy). */
export function electionTermsBackwards(store: MemoryLockStore): LockProvider {
  const backwards = (term: bigint | undefined): bigint | undefined => (term === undefined ? undefined : 1_000_000n - term);
  const flip = (info: LeaderInfo | undefined): LeaderInfo | undefined => (info === undefined ? undefined : { ...info, term: backwards(info.term) });
  return new WrappedProvider(store, {
    election: {
      wrap: (handle) => delegateLeader(handle, { term: backwards(handle.term) }),
      leader: flip,
      observe: (states) => ({
        async *[Symbol.asyncIterator]() {
          for await (const state of states) yield flip(state);
        },
      }),
    },
  });
}

/** `observe` reports the current state, then misses every other change (a lost notification). */
export function electionObserveMissesChanges(store: MemoryLockStore): LockProvider {
  return new WrappedProvider(store, {
    election: {
      observe: (states) => ({
        async *[Symbol.asyncIterator]() {
          let index = 0;
          for await (const state of states) {
            index += 1;
            if (index % 2 === 0) continue;
            yield state;
          }
        },
      }),
    },
  });
}

/** The broken providers by name, for the fixtures. */
export const BROKEN_PROVIDERS = {
  'no-mutual-exclusion': noMutualExclusion,
  'non-monotonic-tokens': nonMonotonicTokens,
  'release-without-owner-check': releaseWithoutOwnerCheck,
  'never-expires': neverExpires,
  'lost-signal-never-fired': lostSignalNeverFired,
  'double-grant-after-expiry': doubleGrantAfterExpiry,
  'deletion-unnoticed': deletionUnnoticed,
  'semaphore-over-limit': semaphoreOverLimit,
  'semaphore-limit-ignored': semaphoreLimitIgnored,
  'semaphore-tokens-backwards': semaphoreTokensBackwards,
  'election-two-leaders': electionTwoLeaders,
  'election-terms-backwards': electionTermsBackwards,
  'election-observe-misses-changes': electionObserveMissesChanges,
} as const;
