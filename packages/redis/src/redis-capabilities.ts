import { normalizeCapabilities, type LockCapabilities } from '@fencelock/core/adapter';

/** The smallest TTL the provider accepts, in ms (see {@link REDIS_CAPABILITIES}). */
export const REDIS_MIN_TTL_MS = 100;

/**
 * What `@fencelock/redis` guarantees.
 * - `fencing: 'per-key'`: one primary's counter per key (see the acquire script for why it never goes
 *   backwards, and the README for what that assumes).
 * - `notify`: releases are published; waiters wake at once (expiry is found by polling).
 * - `fifo: false`: after a release, every waiter tries and the fastest wins.
 * - `ttlResolutionMs: 1`: `PX` takes milliseconds.
 * - `deletionNotice: 'renewal'`: a lock key deleted behind the holder's back is found gone by the
 *   next automatic extension (a third of the TTL), not at once.
 * - `semaphore: 'multi-permit'`: one script over a sorted set of holders scored by expiry takes
 *   several permits at once (see semaphore-scripts.ts); waiting for permits is not FIFO either.
 * - `election: 'polled'`: an election is the lock at the election's own keys (see election-keys.ts),
 *   its term the lock's token. Polled, not notified: not every change is published to a watcher. A
 *   release is announced only to the process of the next registered waiter (and not at all when
 *   nobody waits), a grant is not announced by the shared acquire script (a publish sent after it
 *   can be lost with the granting connection), and pub/sub messages sent while a subscriber
 *   reconnects are lost.
 * - `minTtlMs: 100`: below that, a round trip and the drift margin eat most of the validity and
 *   automatic extension (every third of the TTL) would hammer the server.
 */
export const REDIS_CAPABILITIES: LockCapabilities = normalizeCapabilities({
  fencing: 'per-key',
  lossDetection: true,
  extend: true,
  notify: true,
  fifo: false,
  readWrite: false,
  expiry: 'per-lock',
  ttlResolutionMs: 1,
  minTtlMs: REDIS_MIN_TTL_MS,
  deletionNotice: 'renewal',
  semaphore: 'multi-permit',
  election: 'polled',
});
