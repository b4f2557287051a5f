import { LockTypeError } from '@fencelock/core/adapter';

/**
 * How long a release reserves a free key for the clients already waiting for it, in ms: set by the
 * release scripts (of `@fencelock/redis` and `@fencelock/redlock`) only while waiters are
 * registered, ended early by the next grant. Within it, a waiting attempt of a client that was not
 * in line (typically the releaser coming straight back) is turned away once and joins the line, so
 * the woken waiters get the lock first. It covers the release announcement reaching a waiter and
 * that waiter's next attempt, on a loaded host; it is short because a waiter that crashed may be
 * the only one in line. A try-once attempt is never held back: a free key is granted to it.
 */
export const HANDOFF_RESERVATION_MS = 1_000;

/**
 * Who gets a released lock when clients wait for it (option `handoff` of both Redis adapters):
 *
 * - `'waiters-first'` (the default): a release reserves the free key for the clients already
 *   waiting ({@link HANDOFF_RESERVATION_MS}); a client that was not in line, typically the releaser
 *   asking again at once, is turned away once and joins the line. Nobody is starved, at the price of
 *   a hand-off between processes on every contended release.
 * - `'barging'`: this provider's waiting attempts ignore the reservation and take a free key at
 *   once, as node-redlock and redis-semaphore do: the releasing process often takes the lock straight
 *   back, and a client may wait until its `waitMs` runs out while others take the lock again and
 *   again. Waiters are still notified of releases. It buys throughput where a hand-off needs the
 *   waiter's own attempt (Redlock); where the release grants the lock to the head of the line itself
 *   (`@fencelock/redis`), little or none (see that README's figures).
 *
 * The choice is per provider; both kinds may wait on one key (a barging client may take the lock
 * from under a reservation made for a waiting one).
 */
export type HandoffPolicy = 'waiters-first' | 'barging';

const HANDOFF_POLICIES: Readonly<Record<HandoffPolicy, true>> = { 'waiters-first': true, barging: true };

/** The default {@link HandoffPolicy}. */
export const DEFAULT_HANDOFF: HandoffPolicy = 'waiters-first';

/** Checks option `handoff` (before any connection is made); `undefined` is the default. @throws LockTypeError */
export function resolveHandoff(value: unknown): HandoffPolicy {
  if (value === undefined) return DEFAULT_HANDOFF;
  if (typeof value === 'string' && Object.hasOwn(HANDOFF_POLICIES, value)) return value as HandoffPolicy;
  const names = Object.keys(HANDOFF_POLICIES).map((name) => `'${name}'`).join(' or ');
  throw new LockTypeError('options.handoff', `options.handoff must be ${names}, got ${describeValue(value)}`);
}

function describeValue(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : typeof value;
}
