/** Bounded waiting: every loop here ends by count and by time. */

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Options of {@link waitFor}. */
export interface WaitOptions {
  /** What is awaited, for the error message ("redis 127.0.0.1:6379 to answer PING"). */
  readonly what: string;
  /** Give up after this many milliseconds. */
  readonly timeoutMs: number;
  /** Pause between probes. Default 50 ms. */
  readonly intervalMs?: number;
  /**
   * Checked before every probe: returns a reason to stop at once (e.g. "the process exited
   * with code 1"), so a server that died does not make us wait out the whole timeout.
   */
  readonly abortReason?: () => string | undefined;
  /** Extra text for the timeout error, e.g. the tail of the server's log. */
  readonly describe?: () => string;
}

/** Thrown when a bounded wait ends without success. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
}

/**
 * Calls `probe` until it returns a value other than `undefined`, then returns that value.
 * Probe errors count as "not yet" (the last one is reported). Bounded by `timeoutMs` and by a
 * probe count derived from it, so a probe that returns instantly cannot spin forever.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  options: WaitOptions,
): Promise<T> {
  const intervalMs = options.intervalMs ?? 50;
  const deadline = performance.now() + options.timeoutMs;
  const maxAttempts = Math.ceil(options.timeoutMs / Math.max(1, intervalMs)) + 1;
  let lastError: unknown;
  for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
    const reason = options.abortReason?.();
    if (reason !== undefined) {
      throw new WaitTimeoutError(withDetails(`gave up waiting for ${options.what}: ${reason}`, options));
    }
    try {
      const value = await probe();
      if (value !== undefined) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() >= deadline) break;
    await sleep(Math.min(intervalMs, Math.max(0, deadline - performance.now())));
  }
  const last = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
  throw new WaitTimeoutError(
    withDetails(`timed out after ${options.timeoutMs} ms waiting for ${options.what}${last}`, options),
  );
}

function withDetails(message: string, options: WaitOptions): string {
  const details = options.describe?.();
  return details ? `${message}\n${details}` : message;
}

/** Races `promise` against a timer; rejects with a message naming `what` when the timer wins. */
export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(`timed out after ${timeoutMs} ms: ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
