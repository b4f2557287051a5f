import type { BackendGrant, GrantObserver } from './backend.js';
import type { LockCapabilities } from './capabilities.js';
import { monotonicNow } from './clock.js';
import { LockError, LockErrorCode, asLockError, isLockError, lockLostError } from './errors.js';
import type { LockEventBase, LockEventEmitter, LockEventMap } from './events.js';
import type { BackgroundReleases } from './lifecycle/background-release.js';
import type { RenewalScheduler, RenewalTicket } from './renewal-scheduler.js';
import type { LockHandle, LockMode, LockState } from './types.js';
import { validateTtlMs } from './validation.js';

/** What a handle needs from the provider that made it. */
export interface LockHandleContext {
  readonly providerName: string;
  readonly capabilities: LockCapabilities;
  readonly events: LockEventEmitter;
  /** Called once when the handle stops holding (released or lost), so the provider forgets it. */
  readonly settled: (handle: ManagedLockHandle) => void;
  /** The provider's one timer for automatic extensions (see {@link RenewalScheduler}). */
  readonly renewals: RenewalScheduler;
  /** The provider's releases that failed once and are retried in the background. */
  readonly releases: BackgroundReleases;
}

/** The per-acquisition settings a handle keeps. */
export interface LockHandleSettings {
  readonly key: string;
  readonly mode: LockMode;
  readonly ownerId: string;
  readonly ttlMs: number;
  readonly autoExtend: boolean;
  readonly maxHoldMs: number | undefined;
}

// Handle timers are unref'd: a held lock alone does not keep a process alive (the backend's TTL frees it).
// Extend when a third of the TTL has passed, so two renewals can fail before the lock runs out.
const AUTO_EXTEND_FRACTION = 1 / 3;
// An extension may run this much earlier (as a share of the TTL), to share a request with others due soon.
const AUTO_EXTEND_SLACK_FRACTION = 1 / 6;
// After a failed automatic extension, try again this often (as a share of the TTL) until validity ends.
const AUTO_EXTEND_RETRY_FRACTION = 1 / 10;
// A renewal that starts later than this share of the TTL after it was due is reported.
const RENEWAL_LATE_FRACTION = 1 / 10;

/**
 * The handle core builds around a backend grant: validity deadline, automatic extension, the hold
 * bound, the loss signal, idempotent release and events. One implementation for every backend.
 */
export class ManagedLockHandle implements LockHandle {
  readonly key: string;
  readonly mode: LockMode;
  readonly ownerId: string;
  readonly #settings: LockHandleSettings;
  readonly #context: LockHandleContext;
  // Made on first read of `signal`: most holders never look at it, and an AbortController plus the
  // error for its reason cost more than the rest of an in-memory acquire.
  #controller: AbortController | undefined;
  #lossError: LockError | undefined;
  #grant: BackendGrant | undefined;
  #state: LockState = 'held';
  #acquiredAt = 0;
  #validUntil = 0;
  #lossBeforeAttach: LockError | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  // When the deadline timer fires; it stays armed across renewals that move the deadline later.
  #deadlineTimerAt = Number.POSITIVE_INFINITY;
  #extendTicket: RenewalTicket | undefined;
  #maxHoldTimer: NodeJS.Timeout | undefined;
  // Extensions run one at a time, so a late reply can never overwrite a newer deadline.
  #extendChain: Promise<unknown> = Promise.resolve();
  #released = false;

  /** The callbacks handed to the backend with the acquire request. */
  readonly observer: GrantObserver = {
    lost: (error) => {
      // A session reports one error for all its grants: each handle's own names its key.
      const own = error.key === this.key ? error : lockLostError(this.key, error.reason ?? 'session-lost', error);
      if (this.#state === 'releasing') this.#releaseEnded(false, own);
      else this.#markLost(own);
    },
    uncertain: () => this.#setUncertain(true),
    recovered: () => this.#setUncertain(false),
    renewed: (validUntil) => {
      // A lock whose release is retried lives on with its session: the retries may go on as long.
      if (this.#state === 'releasing') this.#validUntil = Math.max(this.#validUntil, validUntil);
      if (!this.#isActive()) return;
      this.#setValidUntil(validUntil);
      // A session heartbeat is an automatic extension as far as observers (and history checkers) go.
      this.#emit('extended', { ownerId: this.ownerId, validUntil, automatic: true });
    },
  };

  constructor(settings: LockHandleSettings, context: LockHandleContext) {
    this.key = settings.key;
    this.mode = settings.mode;
    this.ownerId = settings.ownerId;
    this.#settings = settings;
    this.#context = context;
  }

  /** Binds the granted lock and starts its timers. A loss reported during the grant is applied now. */
  attach(grant: BackendGrant, acquiredAt: number): void {
    this.#grant = grant;
    this.#acquiredAt = acquiredAt;
    this.#setValidUntil(grant.validUntil);
    if (this.#settings.maxHoldMs !== undefined) {
      this.#maxHoldTimer = setTimeout(() => this.#markLost(lockLostError(this.key, 'max-hold')), this.#settings.maxHoldMs);
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
    const ttl = ttlMs === undefined ? this.#settings.ttlMs : validateTtlMs(ttlMs, capabilities, 'ttlMs');
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
    this.#context.settled(this);
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
    this.#emit('released', { ownerId: this.ownerId, heldMs: monotonicNow() - this.#acquiredAt, wasHeld, confirmed: failure === undefined });
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

  #setValidUntil(validUntil: number): void {
    this.#validUntil = validUntil;
    // A renewal moves the deadline later: the armed timer fires at the old one and re-arms then, so
    // renewing ten thousand locks does not replace ten thousand timers every renewal period.
    if (!Number.isFinite(validUntil)) this.#disarmDeadline();
    else if (validUntil < this.#deadlineTimerAt) this.#armDeadline();
    const ttlMs = this.#settings.ttlMs;
    this.#scheduleAutoExtend(ttlMs * AUTO_EXTEND_FRACTION, ttlMs * AUTO_EXTEND_SLACK_FRACTION);
  }

  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimerAt = this.#validUntil;
    const delay = Math.max(0, Math.ceil(this.#validUntil - monotonicNow()));
    this.#deadlineTimer = setTimeout(() => {
      this.#deadlineTimer = undefined;
      this.#deadlineTimerAt = Number.POSITIVE_INFINITY;
      this.#checkDeadline();
      if (this.#isActive() && Number.isFinite(this.#validUntil)) this.#armDeadline();
    }, delay);
    this.#deadlineTimer.unref();
  }

  #disarmDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    this.#deadlineTimerAt = Number.POSITIVE_INFINITY;
  }

  #scheduleAutoExtend(delayMs: number, slackMs: number): void {
    this.#extendTicket?.cancel();
    if (!this.#settings.autoExtend || this.#context.capabilities.expiry !== 'per-lock') return;
    const dueAt = monotonicNow() + Math.max(1, delayMs);
    this.#extendTicket = this.#context.renewals.schedule(dueAt, slackMs, () => {
      if (!this.#isActive()) return;
      // A busy event loop or a slow backend eats into the margin left for retries: say so while
      // the lock is still valid, so that an operator sees it before the lock is lost.
      const lateMs = monotonicNow() - dueAt;
      if (lateMs > this.#settings.ttlMs * RENEWAL_LATE_FRACTION) this.#reportLate(lateMs, undefined);
      this.#serialExtend(this.#settings.ttlMs, true).catch((error: unknown) => {
        // A lost lock was already reported by #serialExtend; anything else is transient until the deadline.
        if (this.#isActive() && !isLockError(error, LockErrorCode.LOST)) {
          this.#reportLate(monotonicNow() - dueAt, asLockError(error, `extending lock "${this.key}" failed`, this.key));
          this.#scheduleAutoExtend(Math.max(1, this.#settings.ttlMs * AUTO_EXTEND_RETRY_FRACTION), 0);
        }
      });
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
    const next = this.#extendChain.then(run, run);
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
    this.#context.settled(this);
    this.#emit('lost', { ownerId: this.ownerId, heldMs: monotonicNow() - this.#acquiredAt, error });
    if (freeOnBackend && (error.reason === 'expired' || error.reason === 'max-hold' || error.reason === 'session-lost')) {
      void this.#releaseAfterLoss();
    }
  }

  #clearTimers(): void {
    this.#disarmDeadline();
    this.#extendTicket?.cancel();
    clearTimeout(this.#maxHoldTimer);
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
