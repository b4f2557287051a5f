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
