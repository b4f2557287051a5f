/**
 * Per-request timeouts: one error type and one way to bound a backend request, for every adapter.
 * A request that timed out is not known dead (a paused server may apply it later): callers treat it as
 * indeterminate and clean up what it may have created.
 */

/** A backend request got no reply within its timeout. It may still be applied later. */
export class RequestTimeoutError extends Error {
  /** The bound that ran out, in ms. */
  readonly timeoutMs: number;
  constructor(what: string, timeoutMs: number) {
    super(`${what}: no reply within ${timeoutMs} ms`);
    this.name = 'RequestTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Runs `expire` once the replies already received are read. After the process was paused (a GC
 * pause, a stopped or starved process), every overdue timer fires before the event loop reads the
 * sockets, where the replies that came during the pause wait: a request timeout must not fail a
 * request whose answer is already here. `setImmediate` runs after the next read of the sockets.
 */
export function afterPendingReplies(expire: () => void): void {
  setImmediate(expire);
}

/**
 * Resolves or rejects as `request` does, or rejects with {@link RequestTimeoutError} after
 * `timeoutMs` (`Infinity`: no bound) unless its reply was already received by then (see
 * {@link afterPendingReplies}). The timer is always cleared; a late rejection of `request` is
 * swallowed so it never becomes an unhandled rejection.
 */
export function withRequestTimeout<T>(request: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  if (!Number.isFinite(timeoutMs)) return request;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => afterPendingReplies(() => reject(new RequestTimeoutError(what, timeoutMs))), Math.max(0, timeoutMs));
    request.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
