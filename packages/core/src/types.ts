import type { LockCapabilities } from './capabilities.js';
import type { LockError } from './errors.js';
import type { LockEventListener, LockEventMap } from './events.js';

/** `exclusive`: one holder (a mutex, or a write lock). `shared`: many holders, no exclusive one (a read lock). */
export type LockMode = 'exclusive' | 'shared';

/**
 * What a handle, a holder or an event is about: a lock in one of its {@link LockMode}s, a
 * semaphore's permits (`semaphore`), or the leadership of an election (`leader`). Semaphores and
 * elections live in namespaces of their own: a semaphore, an election and a lock of the same name
 * are independent.
 */
export type HoldMode = LockMode | 'semaphore' | 'leader';

/**
 * Where a handle stands.
 * - `held`: the provider believes the lock is held.
 * - `uncertain`: the connection is down; the lock may still be held until `validUntil`.
 * - `releasing`: `release()` was called but the backend has not confirmed it yet (it could not be
 *   reached); the release is retried in the background until it is confirmed or the lock's validity
 *   ends, when the backend frees it by itself. The holder must act as if it no longer holds the lock.
 * - `released`: the release is over: confirmed by the backend, or the lock ran out by itself.
 * - `lost`: the lock is known to be gone; `signal` is aborted.
 */
export type LockState = 'held' | 'uncertain' | 'releasing' | 'released' | 'lost';

/** Options of {@link LockProvider.tryAcquire}. */
export interface TryAcquireOptions {
  /**
   * How long the lock lives without extension if its holder disappears, in ms. Fractions round up to
   * the next ms, then up to the backend's `ttlResolutionMs`. Must be at least the provider's
   * `capabilities.minTtlMs` and at most 2^31−1. Refused with `LOCK_UNSUPPORTED` by `session` providers.
   * @default the provider's `defaultTtlMs` (30_000)
   */
  readonly ttlMs?: number;
  /** Cancels the attempt; an already-aborted signal rejects with `LOCK_ABORTED` before any I/O. */
  readonly signal?: AbortSignal;
  /** `shared` needs `capabilities.readWrite`. @default 'exclusive' */
  readonly mode?: LockMode;
  /**
   * Extend the lock automatically while it is held (every third of its TTL), for `per-lock`
   * providers with `capabilities.extend`. `session` providers keep locks alive through their session
   * and refuse `false`. @default true
   */
  readonly autoExtend?: boolean;
  /**
   * An upper bound on how long this handle may hold the lock, in ms from acquisition. When it is
   * reached the lock is released and the handle is lost with reason `max-hold`, so a stuck process
   * cannot hold a lock forever. @default no bound
   */
  readonly maxHoldMs?: number;
  /** A short string (≤ 1024 UTF-8 bytes) stored with the lock and shown by `inspect`. */
  readonly metadata?: string;
}

/** Options of {@link LockProvider.acquire}. */
export interface AcquireOptions extends TryAcquireOptions {
  /**
   * How long to wait for the lock, in ms. `0` tries once. `Infinity` waits until the signal aborts.
   * @default 30_000
   */
  readonly waitMs?: number;
}

/** Options of {@link LockProvider.tryAcquireSemaphore}: those of a lock, without `mode`, plus the limit. */
export interface TryAcquireSemaphoreOptions extends Omit<TryAcquireOptions, 'mode'> {
  /**
   * How many permits the semaphore has: an integer from 1 to `MAX_SEMAPHORE_LIMIT`. Every holder of a
   * key must pass the same limit: while the semaphore has holders, another limit is refused with
   * `LOCK_LIMIT_MISMATCH`; a semaphore without holders takes the limit of its next acquirer.
   */
  readonly limit: number;
  /**
   * How many permits to take at once, all or none: an integer from 1 to `limit`. Above 1 it needs
   * `capabilities.semaphore` `multi-permit` (else `LOCK_UNSUPPORTED`). @default 1
   */
  readonly permits?: number;
}

/** Options of {@link LockProvider.acquireSemaphore}. */
export interface AcquireSemaphoreOptions extends TryAcquireSemaphoreOptions {
  /**
   * How long to wait for the permits, in ms. `0` tries once. `Infinity` waits until the signal aborts.
   * @default 30_000
   */
  readonly waitMs?: number;
}

/**
 * Options of {@link LockProvider.tryCampaign}: those of a lock that make sense for a leadership
 * (no `mode`, no `metadata`), plus the campaigner's `value`.
 */
export interface TryCampaignOptions extends Omit<TryAcquireOptions, 'mode' | 'metadata'> {
  /**
   * Who this campaigner is (an address, a host name, a JSON document): what {@link LockProvider.leader}
   * and {@link LockProvider.observe} report while it leads. A well-formed string of at most
   * `MAX_ELECTION_VALUE_BYTES` UTF-8 bytes; the empty string is allowed. Required.
   */
  readonly value: string;
}

/** Options of {@link LockProvider.campaign}. */
export interface CampaignOptions extends TryCampaignOptions {
  /**
   * How long to wait for leadership, in ms. `0` tries once. A campaign usually waits as long as it
   * takes: by default it waits until `signal` aborts or the provider is closed (then it rejects
   * with `LOCK_ABORTED` or `LOCK_BACKEND_UNAVAILABLE`), whatever the provider's `defaultWaitMs`.
   * @default Infinity
   */
  readonly waitMs?: number;
}

/** Options of {@link LockProvider.observe}. */
export interface ObserveOptions {
  /** Ends the iteration (it returns; it does not throw). An already-aborted signal yields nothing. */
  readonly signal?: AbortSignal;
  /**
   * How often to read the leader, in ms, on a provider whose `capabilities.election` is `polled`
   * (a `notified` provider is told of changes and reads only then). From `MIN_OBSERVE_POLL_MS` to
   * `MAX_OBSERVE_POLL_MS`; fractions round up. @default 1_000
   */
  readonly pollMs?: number;
}

/**
 * A held lock. Use it with `await using lock = await provider.acquire(key)` so it is released on
 * every exit path, and pass `fencingToken` to the resource you protect with every write.
 */
export interface LockHandle extends AsyncDisposable {
  /** The key, exactly as given. */
  readonly key: string;
  /** Exclusive or shared; `semaphore` for a {@link SemaphoreHandle}, `leader` for a {@link LeaderHandle}. */
  readonly mode: HoldMode;
  /** Unique to this acquisition (a random UUID); the value the backend stores for the holder. */
  readonly ownerId: string;
  /**
   * The fencing token: strictly greater than every token given before for this key (with the
   * strength in `capabilities.fencing`). `undefined` when the provider's fencing is `none`.
   * Still readable after loss, for logging.
   */
  readonly fencingToken: bigint | undefined;
  /** When the lock was granted, on the monotonic clock (`performance.now()` ms). */
  readonly acquiredAt: number;
  /**
   * Until when the lock is known valid, on the monotonic clock (`performance.now()` ms), counted from
   * the *send* time of the last successful acquire or extend. `Infinity` only for locks that cannot expire.
   */
  readonly validUntil: number;
  /** Aborted with a `LOCK_LOST` error the moment loss is known, or with `LOCK_NOT_HELD` on release. */
  readonly signal: AbortSignal;
  /** See {@link LockState}. */
  readonly state: LockState;
  /** True while the lock is held (or uncertain) and the validity deadline has not passed. */
  isHeld(): boolean;
  /** Throws `LOCK_LOST` or `LOCK_NOT_HELD` unless {@link isHeld}; call before a write. */
  assertHeld(): void;
  /**
   * Prolongs the lock to `ttlMs` from now (default: the TTL it was acquired with). On `session`
   * providers it renews the session now and takes no `ttlMs` (`LOCK_UNSUPPORTED` if given).
   * Rejects with `LOCK_LOST` if the lock is gone (it is never re-acquired silently), `LOCK_NOT_HELD`
   * after release, `LOCK_UNSUPPORTED` where the provider cannot extend.
   */
  extend(ttlMs?: number): Promise<void>;
  /**
   * Releases the lock if this owner still holds it, and never touches another owner's lock.
   * Resolves `true` if this handle still held it, `false` otherwise (already released, lost, taken
   * over). Calling it twice is harmless.
   *
   * It never rejects because of backend trouble: when the backend cannot be reached, it resolves
   * `true` at once (the hold has ended for this process), `state` becomes `releasing`, a
   * `release-failed` event is emitted, and the release is retried in the background until the backend
   * confirms it (`state` → `released`, `released` event with `confirmed: true`) or the lock's validity
   * ends and the backend frees it by itself (`release-failed` with `willRetry: false`).
   */
  release(): Promise<boolean>;
}

/**
 * Permits of a counting semaphore, held. Everything a {@link LockHandle} does holds for it (fencing
 * token, signal, extend, release, `await using`, automatic extension, `maxHoldMs`); its fencing token
 * is strictly greater than every token given before for a permit of the same semaphore key.
 */
export interface SemaphoreHandle extends LockHandle {
  /** Always `semaphore`. */
  readonly mode: 'semaphore';
  /** The semaphore's limit, as every holder agreed on it. */
  readonly limit: number;
  /** How many permits this handle holds. */
  readonly permits: number;
}

/**
 * The leadership of an election, held: a {@link LockHandle} (signal, `await using`, automatic
 * extension, `maxHoldMs`, events) whose fencing token is the leader's {@link term}. Its `signal`
 * aborts with `LOCK_LOST` the moment leadership is known lost; stop acting as leader then.
 */
export interface LeaderHandle extends LockHandle {
  /** Always `leader`. */
  readonly mode: 'leader';
  /** The election's name (the same as `key`). */
  readonly name: string;
  /** The value this campaigner stood with. */
  readonly value: string;
  /**
   * The term of this leadership: strictly greater than every term before it in this election (with
   * the strength of `capabilities.fencing`), so that a resource can refuse an old leader's writes.
   * The same as `fencingToken`; `undefined` only when the provider's fencing is `none`.
   */
  readonly term: bigint | undefined;
  /**
   * Gives leadership up (the same as `release()`): the next campaigner may be elected. Resolves when
   * done, `true` if this handle still led. Never rejects because of backend trouble (see `release`).
   */
  resign(): Promise<boolean>;
}

/** The current leader of an election, as {@link LockProvider.leader} and {@link LockProvider.observe} report it. */
export interface LeaderInfo {
  /** The election's name. */
  readonly name: string;
  /** The leader's value (see {@link TryCampaignOptions.value}). */
  readonly value: string;
  /** The leader's term (see {@link LeaderHandle.term}); `undefined` only when the provider's fencing is `none`. */
  readonly term: bigint | undefined;
}

/** One holder of a lock, as {@link LockProvider.inspect} sees it. */
export interface LockHolder {
  /** The holder's owner id (for foreign lock libraries: whatever value they stored). */
  readonly ownerId: string;
  /** The holder's mode. */
  readonly mode: LockMode;
  /** The holder's fencing token, when the provider has fencing and the holder is one of ours. */
  readonly fencingToken: bigint | undefined;
  /** Remaining validity in ms as the backend sees it, if the backend exposes it. */
  readonly remainingMs: number | undefined;
  /** The metadata the holder attached, if any. */
  readonly metadata: string | undefined;
}

/** The current state of a key. */
export interface LockInfo {
  /** The key. */
  readonly key: string;
  /** Every current holder: one for an exclusive lock, one or more for shared locks. */
  readonly holders: readonly LockHolder[];
}

/** One holder of a semaphore's permits, as {@link LockProvider.inspectSemaphore} sees it. */
export interface SemaphoreHolder extends Omit<LockHolder, 'mode'> {
  /** Always `semaphore`. */
  readonly mode: 'semaphore';
  /** How many permits it holds. */
  readonly permits: number;
}

/** The current state of a semaphore key. */
export interface SemaphoreInfo {
  /** The key. */
  readonly key: string;
  /** The limit its holders agreed on. */
  readonly limit: number;
  /** Every current holder; their permits add up to at most `limit`. */
  readonly holders: readonly SemaphoreHolder[];
}

/**
 * One backend connection: the API users program against, the same for every backend.
 * Errors are {@link LockError}s; contention is a value (`tryAcquire` resolves `undefined`).
 */
export interface LockProvider extends AsyncDisposable {
  /** A short name, e.g. `memory`, `redis`, `etcd`. */
  readonly name: string;
  /** What this provider guarantees. */
  readonly capabilities: LockCapabilities;
  /** The TTL used when `ttlMs` is not given, in ms. */
  readonly defaultTtlMs: number;
  /**
   * Acquires `key`, waiting up to `options.waitMs`.
   * @throws {@link LockError} `LOCK_TIMEOUT` when the wait runs out, `LOCK_ABORTED`, `LOCK_INVALID_ARGUMENT`, `LOCK_BACKEND_UNAVAILABLE`.
   */
  acquire(key: string, options?: AcquireOptions): Promise<LockHandle>;
  /** Tries once, without waiting. Resolves `undefined` when another owner holds the key. */
  tryAcquire(key: string, options?: TryAcquireOptions): Promise<LockHandle | undefined>;
  /** The current holders of `key`, or `undefined` when it is free. */
  inspect(key: string): Promise<LockInfo | undefined>;
  /**
   * Takes `options.permits` (default 1) of the counting semaphore `key` of `options.limit` permits,
   * waiting up to `options.waitMs`. Semaphores are a namespace of their own: a lock on the same key
   * neither blocks nor is blocked by it.
   * @throws {@link LockError} `LOCK_LIMIT_MISMATCH` when the current holders use another limit,
   * `LOCK_UNSUPPORTED` without `capabilities.semaphore` (or permits above 1 without `multi-permit`),
   * and what {@link acquire} throws.
   */
  acquireSemaphore(key: string, options: AcquireSemaphoreOptions): Promise<SemaphoreHandle>;
  /** Tries once, without waiting. Resolves `undefined` when not enough permits are free. */
  tryAcquireSemaphore(key: string, options: TryAcquireSemaphoreOptions): Promise<SemaphoreHandle | undefined>;
  /** The current holders of semaphore `key` and its limit, or `undefined` when it has no holder. */
  inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined>;
  /**
   * Campaigns for leadership of the election `name` with `options.value`, waiting until elected
   * (by default with no time bound: until `options.signal` aborts or the provider closes). Elections
   * are a namespace of their own: a lock or a semaphore of the same name neither blocks nor is
   * blocked by them. Within one provider, campaigns of a name queue locally and only the first
   * contends at the backend.
   * @throws {@link LockError} `LOCK_UNSUPPORTED` where `capabilities.election` is `none`, and what
   * {@link acquire} throws (`LOCK_TIMEOUT` only with a finite `waitMs`).
   */
  campaign(name: string, options: CampaignOptions): Promise<LeaderHandle>;
  /** Campaigns once, without waiting. Resolves `undefined` when another campaigner leads. */
  tryCampaign(name: string, options: TryCampaignOptions): Promise<LeaderHandle | undefined>;
  /**
   * The current leader of the election `name`, or `undefined` when it has none.
   * @throws {@link LockError} `LOCK_UNSUPPORTED` where `capabilities.election` is `none`.
   */
  leader(name: string): Promise<LeaderInfo | undefined>;
  /**
   * Follows the leader of the election `name`: yields the current state first (`undefined` when
   * there is no leader), then each change of term or value. Changes are coalesced: a consumer slower
   * than the changes gets the latest state when it asks again, never a backlog. A backend read that
   * fails is retried with backoff (the last state stands meanwhile). Ends (returns) when
   * `options.signal` aborts or the provider closes; `break` ends it too. How it learns of changes is
   * `capabilities.election`: told by the backend (`notified`) or by reading every `pollMs` (`polled`).
   * Each call is one observation, to iterate once; call `observe` again for another.
   *
   * ```ts
   * for await (const leader of provider.observe('scheduler', { signal })) console.log(leader?.value);
   * ```
   * @throws {@link LockError} at once (before any I/O): `LOCK_INVALID_ARGUMENT` for a bad name or
   * option, `LOCK_UNSUPPORTED` where `capabilities.election` is `none`, `LOCK_BACKEND_UNAVAILABLE`
   * when the provider is closed; while iterating, only `LOCK_FORBIDDEN` (the backend refuses the read).
   */
  observe(name: string, options?: ObserveOptions): AsyncIterable<LeaderInfo | undefined>;
  /** Subscribes to an event; returns a function that unsubscribes. */
  on<E extends keyof LockEventMap>(event: E, listener: LockEventListener<E>): () => void;
  /**
   * Runs the backend's configuration check (once; connecting if needed) and resolves the warnings
   * it found: settings of the server that weaken what the provider guarantees, such as a Redis
   * eviction policy. Providers run it on their own when created and emit each warning once as a
   * `backend-warning` event; this lets a tool wait for the answer. Optional: a provider without a
   * check has nothing to report.
   * @throws {@link LockError} `LOCK_BACKEND_UNAVAILABLE` when the backend cannot be asked.
   */
  checkBackend?(): Promise<readonly BackendWarning[]>;
  /** Releases every lock this provider still holds, then closes what the provider opened. Idempotent. */
  close(): Promise<void>;
}

/** A setting of the backend that weakens what the provider guarantees, found by its configuration check. */
export interface BackendWarning {
  /** A stable identifier, e.g. `redis-eviction-policy`. */
  readonly code: string;
  /** What was found, what it risks and what is safe, in plain words (server addresses, never credentials). */
  readonly message: string;
}

/** The `cause`-carrying error type handles abort their signal with. */
export type LockSignalReason = LockError;
