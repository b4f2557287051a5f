/**
 * The one clock-drift rule of fencelock. A backend expires a lock (or a session, or a lease) by its
 * own clock, which may run a little faster than ours; a holder must stop believing in its lock a
 * margin before the backend could have freed it. The margin is a share of the TTL plus a fixed
 * 2 ms for the backend's own expiry precision (Redis expires keys to the millisecond), as the
 * Redlock description gives it.
 */

/** The default share of a TTL kept as drift margin: 1 %. */
export const DEFAULT_CLOCK_DRIFT_FACTOR = 0.01;

/** The fixed part of the drift margin, in ms. */
export const DRIFT_FIXED_MS = 2;

/** The drift margin for a TTL: `ceil(ttlMs × clockDriftFactor) + 2` ms. */
export function driftMarginMs(ttlMs: number, clockDriftFactor: number = DEFAULT_CLOCK_DRIFT_FACTOR): number {
  return Math.ceil(ttlMs * clockDriftFactor) + DRIFT_FIXED_MS;
}

/**
 * Until when a grant or renewal is known valid, on the monotonic clock: the SEND time of the request
 * the backend acknowledged, plus the TTL the backend granted, minus the drift margin. Counting from
 * the send time (not the reply) is what keeps a slow reply from stretching validity.
 */
export function validityDeadline(sentAt: number, grantedTtlMs: number, clockDriftFactor: number = DEFAULT_CLOCK_DRIFT_FACTOR): number {
  return sentAt + grantedTtlMs - driftMarginMs(grantedTtlMs, clockDriftFactor);
}
