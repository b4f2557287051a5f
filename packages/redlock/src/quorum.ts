/**
 * The arithmetic of Redlock (antirez, "Distributed locks with Redis", the Redlock algorithm):
 * majority size and remaining validity, with core's one drift rule. Pure functions, no I/O.
 */
import { driftMarginMs, validityDeadline } from '@fencelock/core/adapter';

/** How many of `masterCount` masters make a majority: ⌊N/2⌋ + 1. */
export function quorumOf(masterCount: number): number {
  return Math.floor(masterCount / 2) + 1;
}

/**
 * What is left of a lock of `ttlMs` after a round that took `elapsedMs`:
 * `validity = ttl − elapsed − drift`, with core's drift margin `⌈ttl × clockDriftFactor⌉ + 2 ms`
 * (the page's formula, with the share rounded up to a whole ms). Positive means usable.
 */
export function remainingValidityMs(ttlMs: number, elapsedMs: number, clockDriftFactor: number): number {
  return ttlMs - elapsedMs - driftMarginMs(ttlMs, clockDriftFactor);
}

/**
 * Until when a round that started (sent its requests) at `start` holds the lock, on the monotonic
 * clock: core's `validityDeadline`, `start + ttl − drift`. The time the round took is not subtracted
 * again: it is already behind `start`, and what is left when the round ends is exactly
 * {@link remainingValidityMs}.
 */
export function roundValidUntil(start: number, ttlMs: number, clockDriftFactor: number): number {
  return validityDeadline(start, ttlMs, clockDriftFactor);
}
