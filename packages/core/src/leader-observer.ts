import type { LockBackend } from './backend.js';
import { monotonicNow } from './clock.js';
import { LockErrorCode, asLockError } from './errors.js';
import { backoffDelayMs, type RetryOptions } from './lifecycle/backoff.js';
import { waitFor } from './lifecycle/wait.js';
import type { LeaderInfo } from './types.js';

/** What {@link observeLeader} follows, and how. */
export interface LeaderObservation {
  readonly backend: LockBackend;
  /** The election's name, validated. */
  readonly name: string;
  /** Read the leader this often even without a notification (a `polled` backend, or no `watchLeader`). */
  readonly poll: boolean;
  readonly pollMs: number;
  /** Ends the observation: the caller's signal or the provider's close, whichever comes first. */
  readonly signal: AbortSignal;
}

// A read or watch that fails is tried again after a growing pause, capped so that an observer sees
// the backend back within a couple of seconds of its return.
const OBSERVE_RETRY: RetryOptions = Object.freeze({ initialDelayMs: 20, maxDelayMs: 2_000, factor: 2 });

// Refusals that asking again cannot change: the observation ends with them.
const FATAL: ReadonlySet<string> = new Set([LockErrorCode.FORBIDDEN, LockErrorCode.UNSUPPORTED, LockErrorCode.INVALID_ARGUMENT]);

/**
 * The leader of an election as an async iteration: the current state first, then each change of term
 * or value. A change only marks the state stale (a flag, not a queue): the next read, when the
 * consumer asks again, reports the latest state, so a slow consumer costs no memory and sees no
 * backlog. Ends (returns) when `signal` aborts; the backend's watch is let go at once then, even if
 * the consumer never asks again, and when the consumer stops early (`break`).
 */
export async function* observeLeader(observation: LeaderObservation): AsyncGenerator<LeaderInfo | undefined, void, undefined> {
  const { backend, name, poll, pollMs, signal } = observation;
  if (signal.aborted) return;
  // Let go of the watch when the observation ends by the signal, or by the consumer (finally below).
  const stop = new AbortController();
  const watchSignal = AbortSignal.any([signal, stop.signal]);
  let stale = true;
  let wake: (() => void) | undefined;
  const changed = (): void => {
    stale = true;
    wake?.();
  };
  let watching = backend.watchLeader === undefined;
  let failures = 0;
  let reported = false;
  let last: LeaderInfo | undefined;
  // Resolves false when the signal aborted during the pause.
  const pause = async (deadline: number): Promise<boolean> => {
    try {
      await waitFor<void>({
        deadline,
        signal,
        until: (wakeUp) => {
          if (stale) wakeUp();
          wake = wakeUp;
          return () => {
            wake = undefined;
          };
        },
      });
      return true;
    } catch {
      return false;
    }
  };
  const failed = async (error: unknown): Promise<boolean> => {
    const failure = asLockError(error, `observing the leader of "${name}" failed`, name);
    if (FATAL.has(failure.code)) throw failure;
    failures += 1;
    // Not woken by a change: the backend is failing, and a notification will not make it answer.
    const until = monotonicNow() + backoffDelayMs(failures, OBSERVE_RETRY);
    try {
      await waitFor({ deadline: until, signal });
      return true;
    } catch {
      return false;
    }
  };
  try {
    while (!signal.aborted) {
      // The watch comes before the read it protects: a change after it is in place is never missed.
      if (!watching) {
        try {
          await backend.watchLeader!(name, changed, watchSignal);
          watching = true;
        } catch (error) {
          if (!(await failed(error))) return;
          continue;
        }
      }
      if (stale) {
        stale = false;
        let state: LeaderInfo | undefined;
        try {
          const read = await backend.leader!(name);
          state = read === undefined ? undefined : { name, value: read.value, term: read.term };
          failures = 0;
        } catch (error) {
          stale = true;
          if (!(await failed(error))) return;
          continue;
        }
        if (signal.aborted) return;
        if (!reported || differs(last, state)) {
          reported = true;
          last = state;
          yield state;
          continue;
        }
      }
      if (!(await pause(poll ? monotonicNow() + pollMs : Number.POSITIVE_INFINITY))) return;
      if (poll) stale = true;
    }
  } finally {
    stop.abort();
  }
}

function differs(a: LeaderInfo | undefined, b: LeaderInfo | undefined): boolean {
  if (a === undefined || b === undefined) return a !== b;
  return a.term !== b.term || a.value !== b.value;
}
