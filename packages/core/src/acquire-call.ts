import type { BackendAcquireRequest, GrantObserver } from './backend.js';
import type { BackgroundReleases } from './lifecycle/background-release.js';
import type { LockMode } from './types.js';
import type { NormalizedAcquireOptions } from './validation.js';

/**
 * The abort state and the `contended` flag of one acquire call, shared by its attempts.
 *
 * The call's AbortSignal is made only when a backend reads it, i.e. when it is about to wait: a
 * single attempt that succeeds (the common, uncontended case) never does, and an AbortController
 * plus the listener forwarding the caller's signal cost more than the rest of an in-memory acquire.
 * Until then, aborts are recorded here and checked by core after the attempt, so they are never lost.
 */
export class AcquireCall {
  /** Whether an attempt found the key held (reported once, through `onContended`). */
  contended = false;
  readonly #userSignal: AbortSignal | undefined;
  readonly #onContended: () => void;
  #controller: AbortController | undefined;
  #forward: (() => void) | undefined;
  #closed = false;
  #closeReason: unknown;

  constructor(userSignal: AbortSignal | undefined, onContended: () => void) {
    this.#userSignal = userSignal;
    this.#onContended = onContended;
  }

  /** Aborted when the caller's signal aborts or {@link abort} is called, whichever is first. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      const user = this.#userSignal;
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
    return this.#closed || this.#userSignal?.aborted === true;
  }

  /** Why the call was aborted (meaningful only when {@link aborted}). */
  get reason(): unknown {
    if (this.#controller !== undefined) return this.#controller.signal.reason;
    return this.#closed ? this.#closeReason : this.#userSignal?.reason;
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
    this.#onContended();
  }

  /** Stops listening to the caller's signal (once the call is over). */
  dispose(): void {
    if (this.#forward !== undefined) this.#userSignal?.removeEventListener('abort', this.#forward);
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

  constructor(
    call: AcquireCall,
    key: string,
    settings: Pick<NormalizedAcquireOptions, 'mode' | 'ttlMs' | 'metadata'>,
    deadline: number,
    holder: { readonly ownerId: string; readonly observer: GrantObserver },
    releases: BackgroundReleases,
  ) {
    this.#call = call;
    this.#releases = releases;
    this.key = key;
    this.mode = settings.mode;
    this.ownerId = holder.ownerId;
    this.ttlMs = settings.ttlMs;
    this.deadline = deadline;
    this.metadata = settings.metadata;
    this.observer = holder.observer;
  }

  get signal(): AbortSignal {
    return this.#call.signal;
  }

  // An arrow property, not a method: backends may pass `request.contended` on as a bare function.
  readonly contended = (): void => this.#call.markContended();

  readonly releaseLater = (release: () => Promise<unknown>, until: number | (() => number)): void => {
    this.#releases.start({ attempt: release, until: typeof until === 'function' ? until : () => until, settled: () => undefined });
  };
}
