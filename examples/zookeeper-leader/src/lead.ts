import { setTimeout as delay } from 'node:timers/promises';
import { isLockError, type LockHandle } from '@fencelock/core';

/** Options of {@link lead}. */
export interface LeadOptions {
  /** Pause between two rounds of work, in ms. */
  readonly workIntervalMs: number;
  /**
   * One round of the leader's periodic work (here: a job whose result is written to the schedule
   * store with the term). Every write it makes carries `term`: the check of `lock.isHeld()` before
   * the round cannot cover a pause in the middle of it, the fence at the store does.
   */
  readonly work: (round: number, term: bigint | undefined) => Promise<void>;
  /** Aborted when the worker is told to stop. */
  readonly stop: AbortSignal;
  /** Upper bound on rounds per term, so that no loop is unbounded. @default 10_000 */
  readonly maxRounds?: number;
}

/**
 * The leader's term: periodic work for as long as the lock is held. `lock.isHeld()` is checked
 * before every round — it reads the clock, so after a pause longer than the session it is false
 * before anything else runs — and `lock.signal` cuts the wait between rounds short the moment the
 * lock is known lost. Resolves why the term ended: `released` when told to stop, else the loss's code.
 */
export async function lead(lock: LockHandle, options: LeadOptions): Promise<string> {
  const maxRounds = options.maxRounds ?? 10_000;
  const stopOrLost = AbortSignal.any([lock.signal, options.stop]);
  for (let round = 1; round <= maxRounds && lock.isHeld() && !options.stop.aborted; round += 1) {
    await options.work(round, lock.fencingToken);
    await delay(options.workIntervalMs, undefined, { signal: stopOrLost }).catch(() => undefined);
  }
  const reason: unknown = lock.signal.reason;
  const ended = !lock.isHeld() && isLockError(reason) ? reason.code : 'released';
  await lock.release();
  return ended;
}
