/**
 * The clocks of a history. On one host CLOCK_MONOTONIC is system-wide, so `process.hrtime.bigint()`
 * readings of different processes compare directly; `performance.now()` does not (its origin is each
 * process's start), which is why handles' `validUntil` must be converted before it is recorded.
 */

/** Now on the system-wide monotonic clock, in ns (as a number: exact for 104 days of uptime). */
export function monotonicNs(): number {
  return Number(process.hrtime.bigint());
}

/**
 * Converts a `performance.now()` reading of this process (ms, e.g. a handle's `validUntil`) to the
 * system-wide monotonic clock in ns, so that other processes can compare it. Both clocks run at the
 * same rate; the conversion reads them back to back, so its error is well under a microsecond.
 * `Infinity` (a lock that cannot expire) becomes `null`.
 */
export function performanceMsToMonotonicNs(performanceMs: number): number | null {
  if (!Number.isFinite(performanceMs)) return null;
  const nowNs = monotonicNs();
  const nowMs = performance.now();
  return Math.round(nowNs - (nowMs - performanceMs) * 1e6);
}

/** Nanoseconds to milliseconds. */
export function nsToMs(ns: number): number {
  return ns / 1e6;
}

/** Milliseconds to nanoseconds. */
export function msToNs(ms: number): number {
  return ms * 1e6;
}
