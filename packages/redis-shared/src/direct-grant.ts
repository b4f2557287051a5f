import { LockErrorCode, isLockError, type BackendGrant, type GrantObserver } from '@fencelock/core/adapter';
import { HANDOFF_RESERVATION_MS } from './handoff.js';

/**
 * The TTL a release grants the head of the line directly, in ms (`@fencelock/redis`): the waiter's
 * own TTL, at most a hand-off reservation's length, so that a waiter that died in line holds the
 * lock back no longer than a reservation would. The waiter extends it to its TTL at once
 * ({@link extendDirectGrant}).
 */
export function directGrantTtlMs(ttlMs: number): number {
  return Math.min(ttlMs, HANDOFF_RESERVATION_MS);
}

/**
 * Extends a lock granted directly for {@link directGrantTtlMs} to the TTL its acquisition asked
 * for, in the background, and tells core the new deadline. A lock found gone is reported lost; a
 * failed request leaves the lock valid until its grant TTL runs out, as a failed renewal does.
 */
export function extendDirectGrant(grant: BackendGrant, ttlMs: number, observer: GrantObserver): void {
  if (directGrantTtlMs(ttlMs) >= ttlMs) return;
  grant.extend(ttlMs).then(
    (validUntil) => observer.renewed(validUntil),
    (error: unknown) => {
      if (isLockError(error, LockErrorCode.LOST)) observer.lost(error);
    },
  );
}
