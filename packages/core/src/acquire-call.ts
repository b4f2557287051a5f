import type { BackendAcquireRequest, BackendCampaignRequest, BackendSemaphoreRequest, GrantObserver } from './backend.js';
import type { BackgroundReleases } from './lifecycle/background-release.js';
import type { LockMode } from './types.js';
import type { Slotted } from './lifecycle/slot-list.js';
import type { ElectionSettings, NormalizedAcquireOptions, SemaphoreSettings } from './validation.js';

/**
 * The abort state and the `contended` flag of one acquire call, shared by its attempts.
 *
 * The call's AbortSignal is made only when a backend reads it, i.e. when it is about to wait: a
 * single attempt that succeeds (the common, uncontended case) never does, and an AbortController
 * plus the listener forwarding the caller's signal cost more than the rest of an in-memory acquire.
 * Until then, aborts are recorded here and checked by core after the attempt, so they are never lost.
 */
export class AcquireCall implements Slotted {
  /** Whether an attempt found the key held (reported once, through `onContended`). */
  contended = false;
  /** The call's place in its provider's list of calls in flight. */
  listSlot = -1;
  readonly key: string;
  readonly settings: NormalizedAcquireOptions;
  // The provider's one callback for every call (a closure per call would cost more than the call).
  readonly #onContended: (call: AcquireCall) => void;
  #controller: AbortController | undefined;
  #forward: (() => void) | undefined;
  #closed = false;
  #closeReason: unknown;

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
      const user = this.settings.signal;
      if (this.#closed) {
        controller.abort(this.#closeReason);
      } else if (user?.aborted) {
        controller.abort(user.reason);
      } else if (user !== undefined) {
        this.#forward = () => controller.abort(user.reason);
        user.addEventListener('abort', this.#forward, { once: true });
      }
    }
    return this.#controller.signal;
  }

  /** Whether the call was aborted, by the caller or by {@link abort}. */
  get aborted(): boolean {
    if (this.#controller !== undefined) return this.#controller.signal.aborted;
    return this.#closed || this.settings.signal?.aborted === true;
  }

  /** Why the call was aborted (meaningful only when {@link aborted}). */
  get reason(): unknown {
    if (this.#controller !== undefined) return this.#controller.signal.reason;
    return this.#closed ? this.#closeReason : this.settings.signal?.reason;
  }

  /** Aborts the call from the provider's side (its shutdown), with `reason`. A no-op once aborted. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.#closed = true;
    this.#closeReason = reason;
    this.#controller?.abort(reason);
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

  // Functions bound to this request, not methods: backends may pass `request.contended` on as a bare
  // function. Made on first use, which an uncontended attempt never has.
  get contended(): () => void {
    return (this.#contended ??= () => this.#call.markContended());
  }

  get releaseLater(): BackendAcquireRequest['releaseLater'] {
    return (this.#releaseLater ??= (release, until) => {
      this.#releases.start({ attempt: release, until: typeof until === 'function' ? until : () => until, settled: () => undefined });
    });
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
