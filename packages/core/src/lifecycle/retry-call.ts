import { backoffDelayMs, type RetryOptions } from './backoff.js';
import { sleep } from './wait.js';

/** Bounds of {@link retryCall}. */
export interface RetryCallOptions {
  /** The most calls made. */
  readonly attempts: number;
  /** The backoff between a failed call and the next. */
  readonly retry: RetryOptions;
  /** Ends the retries (during a backoff delay too). */
  readonly signal?: AbortSignal;
  /** Asked before each call: `false` ends the retries (the call's reason to exist is gone). */
  readonly proceed?: () => boolean;
}

/**
 * One call retried after failures, with jittered backoff, a bounded number of times: for a call made
 * in the background (a read-back, a check) whose failure is reported by what happens without it.
 * Resolves `{ value }` from the first call that succeeds, or `undefined` when every call failed, the
 * signal aborted or `proceed` said no. Never rejects.
 */
export async function retryCall<T>(call: () => Promise<T>, options: RetryCallOptions): Promise<{ readonly value: T } | undefined> {
  for (let attempt = 0; attempt < options.attempts; attempt += 1) {
    if (options.signal?.aborted === true || options.proceed?.() === false) return undefined;
    try {
      return { value: await call() };
    } catch {
      if (attempt + 1 < options.attempts) await sleep(backoffDelayMs(attempt, options.retry), options.signal).catch(() => undefined);
    }
  }
  return undefined;
}
