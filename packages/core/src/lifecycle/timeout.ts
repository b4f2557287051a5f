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
 * Resolves or rejects as `request` does, or rejects with {@link RequestTimeoutError} after
 * `timeoutMs` (`Infinity`: no bound). The timer is always cleared; a late rejection of `request` is
 * swallowed so it never becomes an unhandled rejection.
 */
export function withRequestTimeout<T>(request: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  if (!Number.isFinite(timeoutMs)) return request;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new RequestTimeoutError(what, timeoutMs)), Math.max(0, timeoutMs));
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
