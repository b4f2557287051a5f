/** Backoff between attempts: exponential growth, a cap, and jitter. */
export interface RetryOptions {
  /** Delay before the second attempt, in ms. @default 10 */
  readonly initialDelayMs: number;
  /** The largest delay between attempts, in ms. @default 500 */
  readonly maxDelayMs: number;
  /** Growth per attempt. @default 2 */
  readonly factor: number;
}

/** The defaults of {@link RetryOptions} for waiting on a held lock. */
export const DEFAULT_RETRY: RetryOptions = Object.freeze({ initialDelayMs: 10, maxDelayMs: 500, factor: 2 });

/**
 * The delay before attempt `attempt + 1`, with "equal jitter" (a uniform draw in [cap/2, cap]):
 * clients that collided once spread out instead of colliding again in lockstep.
 */
export function backoffDelayMs(attempt: number, retry: RetryOptions = DEFAULT_RETRY, random: () => number = Math.random): number {
  const cap = Math.min(retry.maxDelayMs, retry.initialDelayMs * retry.factor ** Math.min(attempt, 64));
  return cap / 2 + random() * (cap / 2);
}
