/**
 * The one clock fencelock reads for validity. It is monotonic (`performance.now()`), so a wall-clock
 * jump (NTP, a VM resume, a user changing the date) can neither extend nor shorten a lock.
 * Values are milliseconds since an arbitrary origin: compare them only with each other.
 */
export function monotonicNow(): number {
  return performance.now();
}
