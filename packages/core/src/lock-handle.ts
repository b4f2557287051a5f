import type { BackendGrant, GrantObserver } from './backend.js';
import type { LockCapabilities } from './capabilities.js';
import { monotonicNow } from './clock.js';
import { LockError, LockErrorCode, asLockError, isLockError, lockLostError } from './errors.js';
import type { LockEventBase, LockEventEmitter, LockEventMap } from './events.js';
import type { BackgroundReleases } from './lifecycle/background-release.js';
import { DeadlineQueue, type DeadlineEntry } from './lifecycle/deadline-queue.js';
import type { SlotList, Slotted } from './lifecycle/slot-list.js';
import type { RenewalScheduler, RenewalTicket } from './renewal-scheduler.js';
import type { HoldMode, LeaderHandle, LockHandle, LockState, SemaphoreHandle } from './types.js';
import { validateTtlMs, type NormalizedAcquireOptions } from './validation.js';

/** What a handle needs from the provider that made it. */
export interface LockHandleContext {
  readonly providerName: string;
  readonly capabilities: LockCapabilities;
  readonly events: LockEventEmitter;
  /** The provider's held locks: a handle is in it from its grant until it stops holding (released or lost). */
  readonly held: SlotList<HandleLink>;
  /** The provider's one timer for the validity deadlines of its handles (see {@link handleDeadlines}). */
  readonly deadlines: DeadlineQueue<HandleLink>;
  /** The provider's one timer for automatic extensions (see {@link RenewalScheduler}). */
  readonly renewals: RenewalScheduler;
  /** The provider's releases that failed once and are retried in the background. */
  readonly releases: BackgroundReleases;
}

/** The per-acquisition settings a handle keeps (the acquire call's checked options). */
export type LockHandleSettings = Pick<NormalizedAcquireOptions, 'mode' | 'ttlMs' | 'autoExtend' | 'maxHoldMs' | 'semaphore' | 'election'>;

// Handle timers are unref'd: a held lock alone does not keep a process alive (the backend's TTL frees it).
// Extend when a third of the TTL has passed, so two renewals can fail before the lock runs out.
const AUTO_EXTEND_FRACTION = 1 / 3;
// An extension may run this much earlier (as a share of the TTL), to share a request with others due soon.
const AUTO_EXTEND_SLACK_FRACTION = 1 / 6;
// After a failed automatic extension, try again this often (as a share of the TTL) until validity ends.
const AUTO_EXTEND_RETRY_FRACTION = 1 / 10;
// A renewal that starts later than this share of the TTL after it was due is reported.
const RENEWAL_LATE_FRACTION = 1 / 10;

/** The handle's own reactions, for {@link HandleLink} (assigned once, in the handle class's static block). */
interface HandleReactions {
  lost(handle: ManagedLockHandle, error: LockError): void;
  uncertain(handle: ManagedLockHandle, uncertain: boolean): void;
  renewed(handle: ManagedLockHandle, validUntil: number): void;
  deadline(handle: ManagedLockHandle): void;
}
let reactions: HandleReactions;

/**
 * What others hold of a handle: the backend its observer, the provider its place among the held locks
 * and in the deadline queue. One small object per handle where the observer used to be four closures
 * and the deadline a timer of its own. The observer's functions are made on first use (a lock that is
 * not lost, uncertain or renewed by a session never uses them), bound, so that a backend may pass
 * `observer.lost` on as a bare function as before.
 */
export class HandleLink implements GrantObserver, DeadlineEntry, Slotted {
  deadlineAt = Number.POSITIVE_INFINITY;
  deadlineIndex = -1;
  listSlot = -1;
  readonly handle: ManagedLockHandle;
  #lost: ((error: LockError) => void) | undefined;
  #uncertain: (() => void) | undefined;
  #recovered: (() => void) | undefined;
  #renewed: ((validUntil: number) => void) | undefined;

  constructor(handle: ManagedLockHandle) {
    this.handle = handle;
  }

  get lost(): (error: LockError) => void {
    return (this.#lost ??= (error) => reactions.lost(this.handle, error));
  }

  get uncertain(): () => void {
    return (this.#uncertain ??= () => reactions.uncertain(this.handle, true));
  }

  get recovered(): () => void {
    return (this.#recovered ??= () => reactions.uncertain(this.handle, false));
  }

  get renewed(): (validUntil: number) => void {
    return (this.#renewed ??= (validUntil) => reactions.renewed(this.handle, validUntil));
  }
}

/** The deadline queue a provider shares among its handles: each entry's deadline checks its handle. */
export function handleDeadlines(): DeadlineQueue<HandleLink> {
  return new DeadlineQueue((link) => reactions.deadline(link.handle));
}

/**
 * The handle core builds around a backend grant: validity deadline, automatic extension, the hold
 * bound, the loss signal, idempotent release and events. One implementation for every backend.
 */
export class ManagedLockHandle implements LockHandle {
  static {
    // The link calls back into private state: a friend, without making these methods public.
    reactions = {
      lost: (handle, error) => handle.#onLost(error),
      uncertain: (handle, uncertain) => handle.#setUncertain(uncertain),
      renewed: (handle, validUntil) => handle.#onRenewed(validUntil),
      deadline: (handle) => handle.#onDeadline(),
    };
  }

  readonly key: string;
  readonly mode: HoldMode;
  readonly ownerId: string;
  readonly #ttlMs: number;
  readonly #autoExtend: boolean;
  readonly #maxHoldMs: number | undefined;
  readonly #context: LockHandleContext;
  readonly #link: HandleLink;
  // Made on first read of `signal`: most holders never look at it, and an AbortController plus the
  // error for its reason cost more than the rest of an in-memory acquire.
  #controller: AbortController | undefined;
  #lossError: LockError | undefined;
  #grant: BackendGrant | undefined;
  #state: LockState = 'held';
  #acquiredAt = 0;
  #validUntil = 0;
  #lossBeforeAttach: LockError | undefined;
  #extendTicket: RenewalTicket | undefined;
  // When the scheduled automatic extension is due, and its task (made once, for every renewal).
  #extendDueAt = 0;
  // The validity the scheduled extension was timed against (the TTL, or a shorter first validity):
  // its lateness and its retries are measured against it.
  #extendWindowMs = 0;
  #extendTask: (() => void) | undefined;
  #maxHoldTimer: NodeJS.Timeout | undefined;
  // Extensions run one at a time, so a late reply can never overwrite a newer deadline (made by the first).
  #extendChain: Promise<unknown> | undefined;
  #released = false;

  constructor(key: string, ownerId: string, settings: LockHandleSettings, context: LockHandleContext) {
    this.key = key;
    this.mode = settings.semaphore !== undefined ? 'semaphore' : settings.election !== undefined ? 'leader' : settings.mode;
    this.ownerId = ownerId;
    this.#ttlMs = settings.ttlMs;
    this.#autoExtend = settings.autoExtend;
    this.#maxHoldMs = settings.maxHoldMs;
    this.#context = context;
    this.#link = new HandleLink(this);
  }

  /** The callbacks handed to the backend with the acquire request. */
  get observer(): GrantObserver {
    return this.#link;
  }

  /** Binds the granted lock and starts its timers. A loss reported during the grant is applied now. */
  attach(grant: BackendGrant, acquiredAt: number): void {
    this.#grant = grant;
    this.#acquiredAt = acquiredAt;
    this.#context.held.add(this.#link);
    this.#setValidUntil(grant.validUntil, grant.provisional === true);
    if (this.#maxHoldMs !== undefined) {
      this.#maxHoldTimer = setTimeout(() => this.#markLost(lockLostError(this.key, 'max-hold')), this.#maxHoldMs);
      this.#maxHoldTimer.unref();
    }
    if (this.#lossBeforeAttach !== undefined) this.#markLost(this.#lossBeforeAttach);
  }

  get fencingToken(): bigint | undefined {
    return this.#grant?.fencingToken;
  }

  get acquiredAt(): number {
    return this.#acquiredAt;
  }

  get validUntil(): number {
    return this.#validUntil;
  }

  get signal(): AbortSignal {
    this.#checkDeadline();
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      const reason = this.#endReason();
      if (reason !== undefined) this.#controller.abort(reason);
    }
    return this.#controller.signal;
  }

  get state(): LockState {
    this.#checkDeadline();
    return this.#state;
  }

  isHeld(): boolean {
    this.#checkDeadline();
    return this.#isActive();
  }

  assertHeld(): void {
    if (this.isHeld()) return;
    throw this.#notHeldError();
  }

  async extend(ttlMs?: number): Promise<void> {
    const capabilities = this.#context.capabilities;
    if (ttlMs !== undefined && capabilities.expiry === 'session') {
      // A session's timeout is fixed when it is opened: a per-lock TTL here would be a silent lie.
      // Refused whatever the value, before it is read, as acquire(key, { ttlMs }) is.
      throw new LockError(LockErrorCode.UNSUPPORTED, `provider ${this.#context.providerName} binds lock "${this.key}" to its session; extend() takes no ttlMs`, { key: this.key });
    }
    const ttl = ttlMs === undefined ? this.#ttlMs : validateTtlMs(ttlMs, capabilities, 'ttlMs');
    if (!capabilities.extend) {
      throw new LockError(LockErrorCode.UNSUPPORTED, `provider ${this.#context.providerName} cannot extend lock "${this.key}"`, { key: this.key });
    }
    this.assertHeld();
    await this.#serialExtend(ttl, false);
  }

  async release(): Promise<boolean> {
    if (this.#released) return false;
    this.#released = true;
    this.#checkDeadline();
    if (this.#state === 'lost') return false;
    const grant = this.#grant;
    this.#state = 'releasing';
    this.#clearTimers();
    if (this.#controller !== undefined) this.#controller.abort(this.#endReason());
    this.#context.held.delete(this.#link);
    if (grant === undefined) {
      this.#releaseEnded(false, undefined);
      return false;
    }
    try {
      const wasHeld = await grant.release();
      this.#releaseEnded(wasHeld, undefined);
      return wasHeld;
    } catch (error) {
      // The backend could not be reached. The work under the lock is done and must not be redone
      // because of it: the release is retried in the background until it is answered or the lock
      // runs out by itself, and this call reports the hold as ended.
      this.#releaseFailed(grant, error);
      return true;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Marks the handle lost (provider shutdown) and frees the lock on the backend (retried if it fails). */
  async abandon(error: LockError): Promise<void> {
    if (!this.#isActive()) return;
    this.#markLost(error, false);
    await this.#releaseAfterLoss();
  }

  #onLost(error: LockError): void {
    // A session reports one error for all its grants: each handle's own names its key.
    const own = error.key === this.key ? error : lockLostError(this.key, error.reason ?? 'session-lost', error);
    if (this.#state === 'releasing') this.#releaseEnded(false, own);
    else this.#markLost(own);
  }

  #onRenewed(validUntil: number): void {
    // A lock whose release is retried lives on with its session: the retries may go on as long.
    if (this.#state === 'releasing') this.#validUntil = Math.max(this.#validUntil, validUntil);
    // A paused process may hear a renewal only after its validity ran out (the answer waited in a
    // socket): the lock is lost by then, and a renewal that would end in the past revives nothing.
    this.#checkDeadline();
    if (!this.#isActive() || validUntil <= monotonicNow()) return;
    this.#setValidUntil(validUntil);
    // A session heartbeat is an automatic extension as far as observers (and history checkers) go.
    if (this.#listens('extended')) this.#emit('extended', { ownerId: this.ownerId, validUntil, automatic: true });
  }

  // The deadline queue found the validity deadline passed (or about to: the clock decides).
  #onDeadline(): void {
    this.#checkDeadline();
    if (this.#isActive() && Number.isFinite(this.#validUntil)) this.#context.deadlines.set(this.#link, this.#validUntil);
  }

  #releaseFailed(grant: BackendGrant, error: unknown): void {
    const failure = asLockError(error, `releasing lock "${this.key}" failed`, this.key);
    this.#emit('release-failed', { ownerId: this.ownerId, error: failure, willRetry: true });
    this.#context.releases.retry(
      {
        attempt: () => grant.release(),
        until: () => (this.#state === 'releasing' ? this.#validUntil : Number.NEGATIVE_INFINITY),
        settled: (result) => {
          if (result.done) this.#releaseEnded(result.answer === true, undefined);
          else this.#releaseEnded(false, asLockError(result.error, `releasing lock "${this.key}" failed`, this.key));
        },
      },
      failure,
    );
  }

  // The end of a release: confirmed by the backend, or given up (the lock expires by itself then).
  #releaseEnded(wasHeld: boolean, failure: LockError | undefined): void {
    if (this.#state !== 'releasing') return;
    this.#state = 'released';
    if (failure !== undefined && !isLockError(failure, LockErrorCode.LOST)) {
      this.#emit('release-failed', { ownerId: this.ownerId, error: failure, willRetry: false });
    }
    if (this.#listens('released')) {
      this.#emit('released', { ownerId: this.ownerId, heldMs: monotonicNow() - this.#acquiredAt, wasHeld, confirmed: failure === undefined });
    }
  }

  // After a loss our view and the backend's may differ (a paused process, a hold bound): free the
  // lock if it is still ours, through the same retried path as a release.
  async #releaseAfterLoss(): Promise<void> {
    const grant = this.#grant;
    if (grant === undefined) return;
    try {
      await grant.release();
    } catch (error) {
      this.#context.releases.retry(
        { attempt: () => grant.release(), until: () => this.#validUntil, settled: () => undefined },
        error,
      );
    }
  }

  /** Why the signal is (or would be) aborted: the loss, or the release; undefined while held. */
  #endReason(): LockError | undefined {
    if (this.#state === 'lost') return this.#lossError;
    if (this.#state === 'released' || this.#state === 'releasing') {
      return new LockError(LockErrorCode.NOT_HELD, `lock "${this.key}" was released`, { key: this.key });
    }
    return undefined;
  }

  #isActive(): boolean {
    return this.#state === 'held' || this.#state === 'uncertain';
  }

  #notHeldError(): LockError {
    if (this.#state === 'lost' && this.#lossError !== undefined) return this.#lossError;
    return new LockError(LockErrorCode.NOT_HELD, `lock "${this.key}" is not held by this handle (${this.#state})`, { key: this.key });
  }

  // A paused process may read state before its timers run: compare with the clock on every read.
  #checkDeadline(): void {
    if (this.#grant !== undefined && this.#isActive() && monotonicNow() >= this.#validUntil) {
      // A session-bound lock's deadline is its session's: say so, whichever of the two timers fires first.
      this.#markLost(lockLostError(this.key, this.#context.capabilities.expiry === 'session' ? 'session-lost' : 'expired'));
    }
  }

  // `provisional`: a grant whose first validity is short by design (see BackendGrant.provisional),
  // extended to the TTL whether or not auto-extension is on: the caller asked for the TTL.
  #setValidUntil(validUntil: number, provisional = false): void {
    this.#validUntil = validUntil;
    // A renewal moves the deadline later within the provider's one deadline queue: no timer per lock
    // is armed or replaced, so renewing ten thousand locks costs no timers at all.
    if (Number.isFinite(validUntil)) this.#context.deadlines.set(this.#link, validUntil);
    else this.#context.deadlines.delete(this.#link);
    if (!this.#renewsItself(provisional)) {
      this.#extendTicket?.cancel();
      return;
    }
    // Timed against what is left of the validity when that is less than the TTL (a short first
    // validity, or a shorter TTL the caller gave extend()), so that it comes before the lock runs out.
    this.#scheduleAutoExtend(Math.min(this.#ttlMs, validUntil - monotonicNow()), AUTO_EXTEND_FRACTION, AUTO_EXTEND_SLACK_FRACTION);
  }

  // Whether core extends this lock before its validity ends: with auto-extension, or once for a
  // provisional grant; only per-lock expiry has anything to extend (sessions renew themselves).
  #renewsItself(provisional: boolean): boolean {
    return (this.#autoExtend || provisional) && this.#context.capabilities.expiry === 'per-lock';
  }

  #scheduleAutoExtend(windowMs: number, fraction: number, slackFraction: number): void {
    this.#extendTicket?.cancel();
    this.#extendWindowMs = windowMs;
    this.#extendDueAt = monotonicNow() + Math.max(1, windowMs * fraction);
    this.#extendTicket = this.#context.renewals.schedule(this.#extendDueAt, windowMs * slackFraction, (this.#extendTask ??= () => this.#autoExtendNow()));
  }

  #autoExtendNow(): void {
    if (!this.#isActive()) return;
    const dueAt = this.#extendDueAt;
    // A busy event loop or a slow backend eats into the margin left for retries: say so while
    // the lock is still valid, so that an operator sees it before the lock is lost.
    const lateMs = monotonicNow() - dueAt;
    const windowMs = this.#extendWindowMs;
    if (lateMs > windowMs * RENEWAL_LATE_FRACTION) this.#reportLate(lateMs, undefined);
    this.#serialExtend(this.#ttlMs, true).catch((error: unknown) => {
      // A lost lock was already reported by #serialExtend; anything else is transient until the deadline.
      if (this.#isActive() && !isLockError(error, LockErrorCode.LOST)) {
        this.#reportLate(monotonicNow() - dueAt, asLockError(error, `extending lock "${this.key}" failed`, this.key));
        this.#scheduleAutoExtend(windowMs, AUTO_EXTEND_RETRY_FRACTION, 0);
      }
    });
  }

  #reportLate(lateMs: number, error: LockError | undefined): void {
    this.#emit('renewal-late', { ownerId: this.ownerId, lateMs, remainingMs: this.#validUntil - monotonicNow(), error });
  }

  #serialExtend(ttlMs: number, automatic: boolean): Promise<void> {
    const run = async (): Promise<void> => {
      const grant = this.#grant;
      if (grant === undefined || !this.isHeld()) throw this.#notHeldError();
      let validUntil: number;
      try {
        validUntil = await grant.extend(ttlMs);
      } catch (error) {
        const failure = asLockError(error, `extending lock "${this.key}" failed`, this.key);
        if (isLockError(failure, LockErrorCode.LOST)) this.#markLost(failure);
        throw failure;
      }
      // The lock may have been lost or released while the request was in flight: never resurrect it.
      if (!this.isHeld()) throw this.#notHeldError();
      this.#setValidUntil(validUntil);
      this.#emit('extended', { ownerId: this.ownerId, validUntil, automatic });
    };
    const next = (this.#extendChain ?? Promise.resolve()).then(run, run);
    this.#extendChain = next.catch(() => undefined);
    return next;
  }

  #setUncertain(uncertain: boolean): void {
    if (!this.#isActive()) return;
    const next: LockState = uncertain ? 'uncertain' : 'held';
    if (this.#state === next) return;
    this.#state = next;
    this.#emit(uncertain ? 'uncertain' : 'recovered', { ownerId: this.ownerId });
  }

  #markLost(error: LockError, freeOnBackend = true): void {
    if (this.#grant === undefined) {
      this.#lossBeforeAttach ??= error;
      return;
    }
    if (!this.#isActive()) return;
    this.#state = 'lost';
    this.#clearTimers();
    this.#lossError = error;
    this.#controller?.abort(error);
    this.#context.held.delete(this.#link);
    if (this.#listens('lost')) this.#emit('lost', { ownerId: this.ownerId, heldMs: monotonicNow() - this.#acquiredAt, error });
    if (freeOnBackend && (error.reason === 'expired' || error.reason === 'max-hold' || error.reason === 'session-lost')) {
      void this.#releaseAfterLoss();
    }
  }

  #clearTimers(): void {
    this.#context.deadlines.delete(this.#link);
    this.#extendTicket?.cancel();
    if (this.#maxHoldTimer !== undefined) clearTimeout(this.#maxHoldTimer);
  }

  #listens(event: keyof LockEventMap): boolean {
    return this.#context.events.has(event);
  }

  #emit<E extends 'released' | 'release-failed' | 'renewal-late' | 'extended' | 'lost' | 'uncertain' | 'recovered'>(
    event: E,
    fields: Omit<LockEventMap[E], keyof LockEventBase>,
  ): void {
    const events = this.#context.events;
    if (!events.has(event)) return;
    const base: LockEventBase = { provider: this.#context.providerName, key: this.key, mode: this.mode };
    events.emit(event, { ...base, ...fields } as LockEventMap[E]);
  }
}

/** The handle of a semaphore's permits: a lock handle (one lifecycle for both) that knows its limit and permits. */
export class ManagedSemaphoreHandle extends ManagedLockHandle implements SemaphoreHandle {
  declare readonly mode: 'semaphore';
  readonly limit: number;
  readonly permits: number;

  constructor(key: string, ownerId: string, settings: LockHandleSettings & { readonly semaphore: { limit: number; permits: number } }, context: LockHandleContext) {
    super(key, ownerId, settings, context);
    this.limit = settings.semaphore.limit;
    this.permits = settings.semaphore.permits;
  }
}

/**
 * The handle of a leadership: a lock handle (one lifecycle for both) that knows its election's name,
 * its value and its term (the fencing token), and resigns by releasing.
 */
export class ManagedLeaderHandle extends ManagedLockHandle implements LeaderHandle {
  declare readonly mode: 'leader';
  readonly value: string;

  constructor(key: string, ownerId: string, settings: LockHandleSettings & { readonly election: { value: string } }, context: LockHandleContext) {
    super(key, ownerId, settings, context);
    this.value = settings.election.value;
  }

  get name(): string {
    return this.key;
  }

  get term(): bigint | undefined {
    return this.fencingToken;
  }

  resign(): Promise<boolean> {
    return this.release();
  }
}
