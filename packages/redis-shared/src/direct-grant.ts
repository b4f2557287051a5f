import { HANDOFF_RESERVATION_MS } from './handoff.js';

/**
 * The TTL a release grants the head of the line directly, in ms (`@fencelock/redis`): the waiter's
 * own TTL, at most a hand-off reservation's length, so that a waiter that died in line holds the
 * lock back no longer than a reservation would. Its grant is provisional (`BackendGrant.provisional`):
 * core extends it to the waiter's TTL before that runs out, unless it is released first.
 */
export function directGrantTtlMs(ttlMs: number): number {
  return Math.min(ttlMs, HANDOFF_RESERVATION_MS);
}
