import type { BackendAcquireRequest, BackendCampaignRequest, BackendSemaphoreRequest, GrantObserver } from './backend.js';
import type { BackgroundReleases } from './lifecycle/background-release.js';
import type { LockMode } from './types.js';
import type { Slotted } from './lifecycle/slot-list.js';
import type { AbortLike } from './lifecycle/wait.js';
import type { ElectionSettings, NormalizedAcquireOptions, SemaphoreSettings } from './validation.js';

/**
 * The abort state and the `contended` flag of one acquire call, shared by its attempts.
 *
 * The call is its own abort signal for waits ({@link AbortLike}, a request's `waitSignal`): a flag
 * and an array of listeners, so that a waiting call (a herd of them, a local line) costs no
 * AbortController. A real AbortSignal is made only when something reads `signal` (an adapter
 * that passes it to a client library); the two abort together. Until anyone listens, aborts are
 * recorded here and checked by core after the attempt, so they are never lost.
 */
export class AcquireCall implements Slotted, AbortLike {
  /** Whether an attempt found the key held (reported once, through `onContended`). */
  contended = false;
  /** The call's place in its provider's list of calls in flight. */
  listSlot = -1;
  readonly key: string;
  readonly settings: NormalizedAcquireOptions;
  // The provider's one callback for every call (a closure per call would cost more than the call).
  readonly #onContended: (call: AcquireCall) => void;
  #controller: AbortController | undefined;
  #listeners: (() => void)[] | undefined;
  // Listens to the caller's signal from the first listener (or `signal` read) on.
  #forward: (() => void) | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(key: string, settings: NormalizedAcquireOptions, onContended: (call: AcquireCall) => void) {
    this.key = key;
    this.settings = settings;
    this.#onContended = onContended;
  }

  /** Aborted when the caller's signal aborts or {@link abort} is called, whichever is first. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.aborted) controller.abort(this.reason);
      else this.#followCaller();
    }
    return this.#controller.signal;
  }

  /** Whether the call was aborted, by the caller or by {@link abort}. */
  get aborted(): boolean {
    return this.#aborted || this.settings.signal?.aborted === true;
  }

  /** Why the call was aborted (meaningful only when {@link aborted}). */
  get reason(): unknown {
    return this.#aborted ? this.#reason : this.settings.signal?.reason;
  }

  /** Calls `listener` once when the call aborts (never if it already has, as an AbortSignal does). */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.#listeners ??= []).push(listener);
    this.#followCaller();
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    const at = listeners === undefined ? -1 : listeners.indexOf(listener);
    if (at >= 0) listeners?.splice(at, 1);
  }

  /** Aborts the call: from the provider's side (its shutdown), with `reason`, or as the caller's signal did. A no-op once aborted. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    // The caller's abort, when it came first (unheard: nothing listened yet), stays the reason.
    const user = this.settings.signal;
    this.#reason = user?.aborted === true ? user.reason : reason;
    this.#controller?.abort(this.#reason);
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }

  /** Marks the call contended; the first time, reports it. */
  markContended(): void {
    if (this.contended) return;
    this.contended = true;
    this.#onContended(this);
  }

  /** Stops listening to the caller's signal (once the call is over). */
  dispose(): void {
    if (this.#forward !== undefined) this.settings.signal?.removeEventListener('abort', this.#forward);
    this.#forward = undefined;
    this.#listeners = undefined;
  }

  // The caller's signal aborts the call; listened to only once something listens to the call.
  #followCaller(): void {
    const user = this.settings.signal;
    if (user === undefined || this.#forward !== undefined) return;
    this.#forward = () => this.abort(user.reason);
    user.addEventListener('abort', this.#forward, { once: true });
  }
}

/** One attempt's request to the backend: its own owner id and observer, the call's signal. */
export class AcquireRequest implements BackendAcquireRequest {
  readonly key: string;
  readonly mode: LockMode;
  readonly ownerId: string;
  readonly ttlMs: number;
  readonly deadline: number;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
  readonly #call: AcquireCall;
  readonly #releases: BackgroundReleases;
  #contended: (() => void) | undefined;
  #releaseLater: BackendAcquireRequest['releaseLater'] | undefined;

  constructor(call: AcquireCall, deadline: number, ownerId: string, observer: GrantObserver, releases: BackgroundReleases) {
    const { settings } = call;
    this.#call = call;
    this.#releases = releases;
    this.key = call.key;
    this.mode = settings.mode;
    this.ownerId = ownerId;
    this.ttlMs = settings.ttlMs;
    this.deadline = deadline;
    this.metadata = settings.metadata;
    this.observer = observer;
  }

  get signal(): AbortSignal {
    return this.#call.signal;
  }

  get waitSignal(): AbortLike {
    return this.#call;
  }

  // Functions bound to this request, not methods: backends may pass `request.contended` on as a bare
  // function. Made on first use, which an uncontended attempt never has.
  get contended(): () => void {
    return (this.#contended ??= () => this.#call.markContended());
  }

  get releaseLater(): BackendAcquireRequest['releaseLater'] {
    return (this.#releaseLater ??= (release, until) =>
      this.#releases.start({ attempt: release, until: typeof until === 'function' ? until : () => until, settled: () => undefined }));
  }
}

/** One attempt's request for a semaphore's permits: a lock request plus the limit and the permits. */
export class SemaphoreAcquireRequest extends AcquireRequest implements BackendSemaphoreRequest {
  readonly limit: number;
  readonly permits: number;

  constructor(
    call: AcquireCall,
    deadline: number,
    ownerId: string,
    observer: GrantObserver,
    releases: BackgroundReleases,
    semaphore: SemaphoreSettings,
  ) {
    super(call, deadline, ownerId, observer, releases);
    this.limit = semaphore.limit;
    this.permits = semaphore.permits;
  }
}

/** One attempt's campaign for leadership: a lock request (`key` is the election's name) plus the value. */
export class CampaignRequest extends AcquireRequest implements BackendCampaignRequest {
  readonly value: string;

  constructor(
    call: AcquireCall,
    deadline: number,
    ownerId: string,
    observer: GrantObserver,
    releases: BackgroundReleases,
    election: ElectionSettings,
  ) {
    super(call, deadline, ownerId, observer, releases);
    this.value = election.value;
  }
}
