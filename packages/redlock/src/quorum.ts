/**
 * The arithmetic of Redlock (antirez, "Distributed locks with Redis", the Redlock algorithm):
 * majority size, clock-drift margin and remaining validity. Pure functions, no I/O.
 */

/** How many of `masterCount` masters make a majority: ⌊N/2⌋ + 1. */
export function quorumOf(masterCount: number): number {
  return Math.floor(masterCount / 2) + 1;
}

/**
 * The time set aside for clock drift between the masters and this process, in ms:
 * `ttl × driftFactor + 2 ms` (the page's formula; the 2 ms cover Redis' own 1 ms expiry precision).
 */
export function driftMarginMs(ttlMs: number, driftFactor: number): number {
  return ttlMs * driftFactor + 2;
}

/**
 * What is left of a lock of `ttlMs` after a round that took `elapsedMs`:
 * `validity = ttl − elapsed − (ttl × driftFactor + 2 ms)`. Positive means usable.
 */
export function remainingValidityMs(ttlMs: number, elapsedMs: number, driftFactor: number): number {
  return ttlMs - elapsedMs - driftMarginMs(ttlMs, driftFactor);
}
