import type { LockError } from './errors.js';
import type { BackendWarning, HoldMode } from './types.js';

/** Fields every lock event carries. */
export interface LockEventBase {
  /** The provider's name. */
  readonly provider: string;
  /** The lock key (a semaphore's key, an election's name). */
  readonly key: string;
  /**
   * Exclusive or shared; `semaphore` for a semaphore's permits, `leader` for the leadership of an
   * election (each a namespace apart from locks).
   */
  readonly mode: HoldMode;
}

/**
 * The events a provider emits, with durations in ms — enough to derive acquisition time p99,
 * contention rate, hold time p99, timeout rate and loss counts.
 */
export interface LockEventMap {
  /** A lock was granted. `waitedMs` counts from the call to the grant. */
  acquired: LockEventBase & {
    readonly ownerId: string;
    readonly fencingToken: bigint | undefined;
    readonly waitedMs: number;
    /** Whether the key was held by someone else when the call started. */
    readonly contended: boolean;
    /** For a semaphore (`mode: 'semaphore'`): the limit its holders agreed on. */
    readonly limit?: number;
    /** For a semaphore (`mode: 'semaphore'`): how many permits this grant holds. */
    readonly permits?: number;
  };
  /** An acquire call found the key held and started to wait (or gave up, for `tryAcquire`). */
  contended: LockEventBase;
  /** An acquire call ran out of `waitMs`. */
  timeout: LockEventBase & { readonly waitedMs: number };
  /** An acquire call was aborted through its signal. */
  aborted: LockEventBase & { readonly waitedMs: number };
  /** A `tryAcquire` found the key held and resolved `undefined`. */
  declined: LockEventBase & { readonly waitedMs: number };
  /**
   * An acquire call failed with an error other than a timeout or the caller's abort: the backend
   * was unreachable, a quorum was not reached, the provider was closed under it.
   */
  failed: LockEventBase & { readonly waitedMs: number; readonly error: LockError };
  /**
   * A release is over. `wasHeld`: the backend still had the lock for this owner and deleted it.
   * `confirmed`: the backend answered; false when the release was given up after retries (the lock
   * then ends by its TTL or with its session). `heldMs` counts up to this event.
   */
  released: LockEventBase & { readonly ownerId: string; readonly heldMs: number; readonly wasHeld: boolean; readonly confirmed: boolean };
  /**
   * A release could not reach the backend. `willRetry: true` the first time (it is retried in the
   * background); `willRetry: false` when the retries end without an answer.
   */
  'release-failed': LockEventBase & { readonly ownerId: string; readonly error: LockError; readonly willRetry: boolean };
  /**
   * An automatic renewal ran late while the lock was still valid: it started `lateMs` after it was
   * due (a blocked event loop, a CPU-starved process), or it failed (`error`) and is retried.
   * `remainingMs` is what was left of the validity then. Several in a row come before a loss.
   */
  'renewal-late': LockEventBase & {
    readonly ownerId: string;
    readonly lateMs: number;
    readonly remainingMs: number;
    readonly error: LockError | undefined;
  };
  /** A held lock was extended (by `extend()` or automatically). */
  extended: LockEventBase & { readonly ownerId: string; readonly validUntil: number; readonly automatic: boolean };
  /** A held lock was lost. */
  lost: LockEventBase & { readonly ownerId: string; readonly heldMs: number; readonly error: LockError };
  /** The connection behind a held lock went down; the lock may still be valid until its deadline. */
  uncertain: LockEventBase & { readonly ownerId: string };
  /** The connection behind an uncertain lock came back and the lock is still held. */
  recovered: LockEventBase & { readonly ownerId: string };
  /**
   * The backend's configuration check found a setting that weakens the guarantees (emitted once per
   * code and provider). Not about one lock: it carries no key.
   */
  'backend-warning': BackendWarning & { readonly provider: string };
}

/** A listener for event `E`. */
export type LockEventListener<E extends keyof LockEventMap> = (event: LockEventMap[E]) => void;

/**
 * A minimal typed emitter. A throwing listener never breaks a lock operation: its error is rethrown
 * on a later microtask, where the process's normal uncaught-error handling sees it.
 */
export class LockEventEmitter {
  readonly #listeners = new Map<keyof LockEventMap, Set<(event: never) => void>>();

  /** Subscribes; returns the unsubscribe function. */
  on<E extends keyof LockEventMap>(event: E, listener: LockEventListener<E>): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as (event: never) => void);
    return () => {
      set.delete(listener as (event: never) => void);
    };
  }

  /** True when someone listens to `event` (lets callers skip building an event nobody reads). */
  has(event: keyof LockEventMap): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0;
  }

  /** Calls every listener of `event` with `payload`. */
  emit<E extends keyof LockEventMap>(event: E, payload: LockEventMap[E]): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const listener of set) {
      try {
        (listener as LockEventListener<E>)(payload);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
