import type { LockCapabilities } from './capabilities.js';
import type { LockError } from './errors.js';
import type { BackendWarning, LeaderInfo, LockInfo, LockMode, SemaphoreInfo } from './types.js';
import type { AbortLike } from './lifecycle/wait.js';

/**
 * Callbacks a backend uses to tell core about a grant after it was made. Passing them in the request
 * (rather than registering them on the grant) leaves no window in which a loss could go unheard.
 */
export interface GrantObserver {
  /** The lock is known gone. Idempotent; the first call wins. */
  lost(error: LockError): void;
  /** The connection behind the lock is down; the lock may still be valid until `validUntil`. */
  uncertain(): void;
  /** The connection came back and the lock is still held. */
  recovered(): void;
  /** The backend renewed the lock on its own (a session heartbeat): the new monotonic deadline. */
  renewed(validUntil: number): void;
}

/** What core asks a backend to acquire. Every field has been validated. */
export interface BackendAcquireRequest {
  /** The user's key, validated (see `validateKey`); the backend encodes it as it needs. */
  readonly key: string;
  readonly mode: LockMode;
  /** A fresh random id for this acquisition. */
  readonly ownerId: string;
  /** The TTL, in ms, already a multiple of `ttlResolutionMs` (ignored by `session` backends). */
  readonly ttlMs: number;
  /**
   * The monotonic time (`performance.now()` ms) after which the backend must stop waiting and resolve
   * `undefined`. Equal to the call time for a single try; `Infinity` to wait until aborted.
   */
  readonly deadline: number;
  /**
   * Aborted when the caller aborts or the provider closes. The backend stops waiting, cleans up
   * (or hands what it may have created to {@link releaseLater}), and may reject with anything. An
   * attempt that is granted after the abort may resolve the grant: core releases it. Made on first
   * read: pass it where an `AbortSignal` is needed (a client library's call), and
   * {@link waitSignal} to core's waits.
   */
  readonly signal: AbortSignal;
  /**
   * The same abort as {@link signal}, as core's waits need it ({@link AbortLike}: `waitFor`, `sleep`,
   * a `Wakeup`) and without making an AbortSignal: a waiting call costs a flag and its listeners
   * instead of an event target. Check `waitSignal.aborted` rather than `signal.aborted` too.
   */
  readonly waitSignal: AbortLike;
  readonly metadata: string | undefined;
  /** Where to report what happens to the grant later. */
  readonly observer: GrantObserver;
  /** Call once when an attempt finds the key held by another owner (for the `contended` event). */
  contended(): void;
  /**
   * Hands core a release that must reach the backend: what an attempt whose outcome is unknown (a
   * timed-out request, a dropped connection) may have created. Core makes the first attempt now, in
   * the background, and retries with backoff until the backend answers or `until` (monotonic ms:
   * when the backend frees it by itself; a function when that moves, as a session's deadline does)
   * has passed, at most `MAX_RELEASE_ATTEMPTS` times. `release` makes one bounded attempt and
   * rejects on failure; it must only ever remove what this request's owner id created.
   *
   * Resolves when the first attempt has settled (answered, or failed and left to the retries); never
   * rejects. A backend whose leftover would hold others back (a place in a line that a release may
   * grant the lock to) awaits it, within its settle bound (`settledBy`), so that a call which
   * settled has cleaned up whenever the backend answered in time.
   */
  releaseLater(release: () => Promise<unknown>, until: number | (() => number)): Promise<void>;
}

/**
 * What core asks a backend to acquire of a counting semaphore: an acquire request without a lock
 * mode, plus the semaphore's limit and the permits wanted. Every field has been validated.
 */
export interface BackendSemaphoreRequest extends Omit<BackendAcquireRequest, 'mode'> {
  /**
   * The semaphore's limit, 1..`MAX_SEMAPHORE_LIMIT`. When the key has holders with another limit,
   * the backend rejects with `limitMismatchError(key, stored, limit)` and takes nothing.
   */
  readonly limit: number;
  /** Permits to take at once, all or none: 1..limit (1 unless `capabilities.semaphore` is `multi-permit`). */
  readonly permits: number;
}

/**
 * What core asks a backend to campaign for: an acquire request without a lock mode or metadata, plus
 * the campaigner's value. `key` is the election's name. Every field has been validated.
 */
export interface BackendCampaignRequest extends Omit<BackendAcquireRequest, 'mode' | 'metadata'> {
  /**
   * Who the campaigner is (well-formed, at most `MAX_ELECTION_VALUE_BYTES` UTF-8 bytes, possibly
   * empty): stored with the candidacy and reported by {@link LockBackend.leader} while it leads
   * (etcd: the value of the `<prefix>/<leaseIdHex>` key; ZooKeeper: the latch node's data).
   */
  readonly value: string;
}

/** A lock a backend granted. */
export interface BackendGrant {
  /** The fencing token, or `undefined` when the backend's fencing is `none`. */
  readonly fencingToken: bigint | undefined;
  /**
   * The monotonic deadline of validity, computed from the *send* time of the request that granted it
   * (minus any drift margin the backend needs). `Infinity` only if it truly cannot expire.
   */
  readonly validUntil: number;
  /**
   * Set when `validUntil` is shorter than the TTL asked for by design (a hand-off's grant, made by a
   * release for a short grant TTL so that a waiter that died in line holds the lock back no longer):
   * core extends the lock to its TTL a third of the way through that validity, with or without
   * auto-extension, and a lock released before then costs no extension.
   */
  readonly provisional?: boolean;
  /**
   * Prolongs the lock to `ttlMs` from the send time of the extend request and resolves the new
   * deadline. Rejects with a `LOCK_LOST` LockError when the backend no longer holds it for this owner
   * (never re-creates it), or another LockError on failure.
   */
  extend(ttlMs: number): Promise<number>;
  /**
   * Deletes the lock only if this owner still holds it; resolves whether it did. Makes ONE bounded
   * attempt and rejects when the backend cannot be reached: core retries in the background (until
   * the backend answers or the lock's validity ends) and never lets that failure reach the user.
   * Adapters write no release retry loop of their own.
   */
  release(): Promise<boolean>;
}

/**
 * The adapter contract: the one primitive each backend writes. Core derives `acquire`, `tryAcquire`,
 * `withLock`, `acquireAll`, events, validity timers, auto-extension and `await using` from it.
 */
export interface LockBackend {
  /** A short name, e.g. `redis`. */
  readonly name: string;
  /** What the backend guarantees (read on every use: it may change once a session is granted). */
  readonly capabilities: LockCapabilities;
  /**
   * Session backends: the session timeout the server GRANTED, in ms, once known; the provider's
   * `defaultTtlMs` reports it. Undefined for per-lock backends.
   */
  readonly sessionTimeoutMs?: number | undefined;
  /**
   * Acquires, waiting at most until `request.deadline`. Resolves `undefined` if the lock is still held
   * by another owner at the deadline. Whatever it created on the way (queued entries, keys, leases)
   * is removed before it resolves `undefined` or rejects.
   */
  acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined>;
  /** The current holders of `key`, or `undefined`. */
  inspect(key: string): Promise<LockInfo | undefined>;
  /**
   * Optional, and required when `capabilities.semaphore` is not `none`: takes `request.permits` of
   * the semaphore `request.key`, waiting at most until `request.deadline`, as {@link acquire} does
   * for a lock (same cleanup duties, same `undefined` at the deadline). Semaphores are a namespace
   * apart: nothing of a lock on the same key may block them or be blocked by them. The grant's
   * fencing token is strictly greater than every token granted before for the same semaphore key.
   * A separate method, so that a backend that knows nothing of semaphores can never take a
   * semaphore request for a lock.
   */
  acquireSemaphore?(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined>;
  /** Optional, required with `acquireSemaphore`: the current holders of semaphore `key` and its limit. */
  inspectSemaphore?(key: string): Promise<SemaphoreInfo | undefined>;
  /**
   * Optional, and required when `capabilities.election` is not `none`: campaigns for leadership of
   * the election `request.key`, waiting at most until `request.deadline`, as {@link acquire} does for
   * a lock (same cleanup duties: a candidacy left behind would be elected later with nobody to lead;
   * same `undefined` at the deadline; `request.contended()` when another campaigner leads). The grant
   * is leadership: its `fencingToken` is the term, strictly greater than every earlier term of that
   * name (etcd: the leader key's create revision; a backend built on its mutex: the mutex's token),
   * `undefined` only with fencing `none`; its `release` resigns, its `extend` keeps the candidacy alive,
   * and `request.observer.lost` tells core when leadership is known gone. Elections are a namespace
   * apart from locks and semaphores of the same name.
   */
  campaign?(request: BackendCampaignRequest): Promise<BackendGrant | undefined>;
  /**
   * Optional, required with `campaign`: the current leader of election `name` (its value and term),
   * or `undefined` when nobody leads. One bounded read; rejects when the backend cannot be reached.
   */
  leader?(name: string): Promise<LeaderInfo | undefined>;
  /**
   * Optional, and required when `capabilities.election` is `notified`: calls `onChange` whenever the
   * leader of election `name` may have changed (a new leader, a resignation, an expiry, a deleted
   * candidacy; also after reconnecting, when a change may have been missed), until `signal` aborts,
   * when it lets go of everything it set up. Spurious calls are harmless: core reads
   * {@link leader} after each and reports only real changes. Resolves once the watch is in place (a
   * change after that is never missed); rejects when it cannot be set up (core retries with backoff).
   */
  watchLeader?(name: string, onChange: () => void, signal: AbortSignal): Promise<void>;
  /**
   * Optional: reads the server settings that decide whether the guarantees hold and resolves the
   * ones that weaken them. One bounded attempt; rejects when the backend cannot be reached (core asks
   * again later), resolves `[]` when the server refuses to tell (a managed server without `CONFIG`).
   * Core calls it when the provider is created and whenever a grant comes while no check has succeeded.
   */
  checkConfiguration?(): Promise<readonly BackendWarning[]>;
  /** Closes what the backend opened (never a client it was handed). Called once, after every release. */
  close(): Promise<void>;
}
