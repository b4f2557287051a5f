import { monotonicNow } from '../clock.js';

/**
 * What a wait needs of an abort signal: its state and its `'abort'` listeners. An
 * `AbortSignal` is one; so is a request's `waitSignal`, core's per-call abort, which costs a flag
 * and an array where an `AbortController` costs an event target (see `AcquireCall`).
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * An {@link AbortLike} that never aborts: for a wait that only its deadline ends (a read made
 * outside any acquire call), without an AbortController made for nothing.
 */
export const NEVER_ABORTED: AbortLike = Object.freeze({
  aborted: false,
  reason: undefined,
  addEventListener(): void {},
  removeEventListener(): void {},
});

/** Options of {@link waitFor}. */
export interface WaitOptions<T> {
  /** When to stop waiting, on the monotonic clock (`performance.now()` ms); `Infinity` for no bound. */
  readonly deadline: number;
  /** Ends the wait at once, rejecting with the signal's reason. */
  readonly signal?: AbortLike | undefined;
  /**
   * Subscribes to what ends the wait early (a notification, a grant); calls `wake` with its value.
   * Returns the unsubscribe function, which is always called when the wait ends, however it ends.
   */
  readonly until?: (wake: (value: T) => void) => () => void;
}

/** How a wait ended without an abort: woken with a value, or the deadline passed. */
export type WaitOutcome<T> = { readonly woken: true; readonly value: T } | { readonly woken: false };

const DEADLINE_PASSED: WaitOutcome<never> = Object.freeze({ woken: false });

/**
 * The one wait of fencelock: a timer, an abort signal and an optional wake-up, with every listener
 * removed and the timer cleared whichever ends it. The timer is re-armed when it fires a fraction
 * of a ms before the monotonic deadline, so a wait never ends early. A signal that is already
 * aborted rejects at once; a wake-up that fires before the wait was set up is kept.
 */
export function waitFor<T = void>(options: WaitOptions<T>): Promise<WaitOutcome<T>> {
  const { deadline, signal, until } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<WaitOutcome<T>>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    let unsubscribe: (() => void) | undefined;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      unsubscribe?.();
      return true;
    };
    const onAbort = (): void => {
      if (finish()) reject(signal?.reason);
    };
    const arm = (): void => {
      timer = setTimeout(() => {
        if (monotonicNow() < deadline) return arm();
        if (finish()) resolve(DEADLINE_PASSED);
      }, Math.max(0, Math.ceil(deadline - monotonicNow())));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (until !== undefined) {
      const off = until((value) => {
        if (finish()) resolve({ woken: true, value });
      });
      // A wake-up during subscription has already finished the wait: unsubscribe now.
      if (done) off();
      else unsubscribe = off;
    }
    if (!done && Number.isFinite(deadline)) arm();
  });
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export async function sleep(ms: number, signal?: AbortLike): Promise<void> {
  await waitFor({ deadline: monotonicNow() + ms, signal });
}

/**
 * Waits for `work` to settle, but not past `deadline` (monotonic ms): resolves `true` when it settled
 * in time (fulfilled or rejected alike), `false` when the deadline came first (`work` goes on). Never
 * rejects. For cleanup a call would rather finish before it settles, without giving up its bound.
 */
export async function settledBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  if (deadline <= monotonicNow()) return false;
  const outcome = await waitFor<void>({
    deadline,
    until: (wake) => {
      work.then(
        () => wake(),
        () => wake(),
      );
      return noop;
    },
  });
  return outcome.woken;
}

function noop(): void {}
