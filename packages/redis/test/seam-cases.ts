/**
 * The conformance cases that go through the client seam, for the client libraries that run the
 * suite as a second member of a family (the same seam class as one that runs the whole suite).
 *
 * Why: the conformance suite checks the lock protocol and core's lifecycle, and most of its cases
 * exercise them identically whatever client carries the commands (bad input is refused before any
 * I/O; expiry, fencing, read-write, semaphores and paused holders are the scripts' and core's
 * logic). What differs between two clients of one family — ioredis 5 and 6 and iovalkey; node-redis
 * 5 and 6 — is the package, its version and the protocol it speaks: how replies decode, how a
 * script is sent and reloaded, how the subscriber connection wakes a waiter, how a dropped
 * connection and a close look. The whole suite runs once per family (ioredis 5, node-redis 6,
 * GLIDE), and the other members run the cases below, which touch exactly those paths. That keeps
 * every client under the suite in `pnpm test` without running the same protocol checks three times
 * per family. Used by @fencelock/redis and @fencelock/redlock (which imports this file).
 */
import { beforeEach, describe } from 'vitest';

/** Titles of the conformance cases that touch the seam (matched against the case's own title). */
export const SEAM_CASES: readonly RegExp[] = [
  // acquire / release / inspect: the scripts' replies decoded by each client and protocol.
  /^acquire returns a held handle/,
  /^tryAcquire resolves undefined on a held key/,
  /^release resolves true once, then false/,
  /^inspect shows the holder/,
  // waiting: the release announcement through the subscriber connection wakes the waiter.
  /^acquire waits while the key is held and succeeds after release/,
  /^aborting during the wait rejects with LOCK_ABORTED/,
  /^gives mutual exclusion to many clients updating a shared counter/,
  // extension: one-off and automatic (batched) extends, and a lost lock's reply.
  /^extend prolongs a held lock past its first TTL/,
  /^automatic extension keeps a lock past its TTL/,
  /^extend after expiry rejects with LOCK_LOST/,
  // faults the client sees: its connection dropped without a release, the key deleted behind it.
  /crashed client: its lock is freed by the backend/,
  /lock deleted behind the holder's back/,
  // closing: a close through the seam releases what it holds and ends waits.
  /^close\(\) releases held locks/,
  /^close\(\) ends waits in progress/,
];

/**
 * Registers `register` (a `describeLockProvider` call) so that only the {@link SEAM_CASES} run; the
 * others are reported as skipped, with the reason.
 */
export function describeSeamCases(name: string, register: () => void): void {
  describe(`${name} (seam cases; the whole suite runs through the family's first client)`, () => {
    beforeEach(({ task, skip }) => {
      if (!SEAM_CASES.some((pattern) => pattern.test(task.name))) skip('not a seam case: the whole suite runs through this family’s first client');
    });
    register();
  });
}
