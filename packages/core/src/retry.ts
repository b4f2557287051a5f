import type { BackendAcquireRequest } from './backend.js';
import { monotonicNow } from './clock.js';
import { LockErrorCode, isLockError } from './errors.js';
import { DEFAULT_RETRY, backoffDelayMs, type RetryOptions } from './lifecycle/backoff.js';
import { sleep, type AbortLike } from './lifecycle/wait.js';

/**
 * A source of "the lock may be free now" notifications, opened before the first attempt so that a
 * release between an attempt and the wait is not missed.
 */
export interface Wakeup {
  /** Resolves when a notification arrived since the last call, or after `ms`; rejects on abort (the request's `waitSignal`). */
  wait(ms: number, signal: AbortLike): Promise<void>;
  /** Stops listening. */
  close(): void;
}

/** Options of {@link waitForGrant}. */
export interface WaitForGrantOptions {
  /** Backoff between attempts. */
  readonly retry?: Partial<RetryOptions>;
  /** Opens a notification source (for backends that can notify); without it, waits are plain polls. */
  readonly wakeup?: () => Wakeup;
  /**
   * Whether a failed first attempt is reported as contention (`request.contended()`). Set it to
   * false when the attempt tells a held key from a failure (a timeout, a lost connection) and calls
   * `request.contended()` itself. @default true
   */
  readonly reportContention?: boolean;
  /**
   * Whether the caller made the first attempt itself (and reported its contention), so that the loop
   * starts with a wait. A backend does so to spare its common single attempt the loop and the
   * wake-up source; the source, opened after that attempt, must then keep the notifications that
   * came since it was sent. @default false
   */
  readonly afterFirstAttempt?: boolean;
  /**
   * Which failures of an attempt are retried like a held key while the deadline lasts (a timed-out
   * request, a lost connection): the loop goes on, and only when the last attempt before the
   * deadline failed is its failure thrown. Without it, an attempt's failure ends the wait at once.
   * A single try (a deadline already passed) always reports its failure.
   */
  readonly retryFailed?: (error: unknown) => boolean;
  /**
   * With {@link afterFirstAttempt} and {@link retryFailed}: the caller's own first attempt failed
   * with this error (one `retryFailed` accepts). It is thrown if the deadline has passed before the
   * loop makes an attempt of its own (it makes one after every wait, so: when the deadline passed
   * while the caller's attempt was on its way), as the failure of a last attempt would be.
   */
  readonly firstAttemptFailure?: { readonly error: unknown };
}

/**
 * Whether a failed attempt is worth retrying while a call waits: anything but a {@link LockError}
 * other than `LOCK_BACKEND_UNAVAILABLE` (a refusal, a bad argument or a closed provider fails the
 * same way again).
 */
export function retryableFailure(error: unknown): boolean {
  return !isLockError(error) || error.code === LockErrorCode.BACKEND_UNAVAILABLE;
}

/**
 * The waiting loop for backends that acquire by trying: try, and until the request's deadline, wait
 * for a notification or a jittered backoff delay, then try again. Bounded by the deadline and the signal.
 * Resolves the first grant, or `undefined` at the deadline; rejects with the signal's reason on abort.
 * The first attempt is made without reading the signal: the caller checks it once the attempt is
 * over (core hands back a grant made for an aborted call), and a single successful attempt, the
 * common case, then never makes core's per-call AbortController.
 */
export async function waitForGrant<T>(
  request: Pick<BackendAcquireRequest, 'deadline' | 'waitSignal' | 'contended'>,
  attempt: () => Promise<T | undefined>,
  options: WaitForGrantOptions = {},
): Promise<T | undefined> {
  const wakeup = request.deadline > monotonicNow() ? options.wakeup?.() : undefined;
  // Made after a failed first attempt: most acquisitions never need it.
  let retry: RetryOptions | undefined;
  const attempted = options.afterFirstAttempt === true;
  // The failure of the last attempt, while failures are retried.
  let failed = attempted && options.retryFailed !== undefined ? options.firstAttemptFailure : undefined;
  try {
    for (let round = 0; ; round += 1) {
      if (round > 0 || !attempted) {
        if (round > 0 && request.waitSignal.aborted) throw request.waitSignal.reason;
        let grant: T | undefined;
        try {
          grant = await attempt();
          failed = undefined;
        } catch (error) {
          if (options.retryFailed === undefined || request.deadline <= monotonicNow() || !options.retryFailed(error)) throw error;
          failed = { error };
        }
        if (grant !== undefined) return grant;
        if (round === 0 && failed === undefined && options.reportContention !== false) request.contended();
      }
      const remaining = request.deadline - monotonicNow();
      if (remaining <= 0) {
        if (failed !== undefined) throw failed.error;
        return undefined;
      }
      retry ??= { ...DEFAULT_RETRY, ...options.retry };
      const delay = Math.min(backoffDelayMs(round, retry), remaining);
      await (wakeup === undefined ? sleep(delay, request.waitSignal) : wakeup.wait(delay, request.waitSignal));
    }
  } finally {
    wakeup?.close();
  }
}
