import type { BackendAcquireRequest } from './backend.js';
import { monotonicNow } from './clock.js';

/** Backoff between polling attempts. */
export interface RetryOptions {
  /** Delay before the second attempt, in ms. @default 10 */
  readonly initialDelayMs: number;
  /** The largest delay between attempts, in ms. @default 500 */
  readonly maxDelayMs: number;
  /** Growth per attempt. @default 2 */
  readonly factor: number;
}

/** The defaults of {@link RetryOptions}. */
export const DEFAULT_RETRY: RetryOptions = Object.freeze({ initialDelayMs: 10, maxDelayMs: 500, factor: 2 });

/**
 * The delay before attempt `attempt + 1`, with "equal jitter" (a uniform draw in [cap/2, cap]):
 * clients that collided once spread out instead of colliding again in lockstep.
 */
export function backoffDelayMs(attempt: number, retry: RetryOptions = DEFAULT_RETRY, random: () => number = Math.random): number {
  const cap = Math.min(retry.maxDelayMs, retry.initialDelayMs * retry.factor ** Math.min(attempt, 64));
  return cap / 2 + random() * (cap / 2);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A source of "the lock may be free now" notifications, opened before the first attempt so that a
 * release between an attempt and the wait is not missed.
 */
export interface Wakeup {
  /** Resolves when a notification arrived since the last call, or after `ms`; rejects on abort. */
  wait(ms: number, signal: AbortSignal): Promise<void>;
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
  request: Pick<BackendAcquireRequest, 'deadline' | 'signal' | 'contended'>,
  attempt: () => Promise<T | undefined>,
  options: WaitForGrantOptions = {},
): Promise<T | undefined> {
  const wakeup = request.deadline > monotonicNow() ? options.wakeup?.() : undefined;
  // Made after a failed first attempt: most acquisitions never need it.
  let retry: RetryOptions | undefined;
  try {
    for (let round = 0; ; round += 1) {
      if (round > 0 && request.signal.aborted) throw request.signal.reason;
      const grant = await attempt();
      if (grant !== undefined) return grant;
      if (round === 0 && options.reportContention !== false) request.contended();
      const remaining = request.deadline - monotonicNow();
      if (remaining <= 0) return undefined;
      retry ??= { ...DEFAULT_RETRY, ...options.retry };
      const delay = Math.min(backoffDelayMs(round, retry), remaining);
      await (wakeup === undefined ? sleep(delay, request.signal) : wakeup.wait(delay, request.signal));
    }
  } finally {
    wakeup?.close();
  }
}
