/**
 * How long, and in how many interleaved rounds, the subjects of one backend are measured in the
 * uncontended (1) and 64-key (3a) scenarios.
 *
 * A ratio is the median of per-round ratios, so its precision depends on how many cycles a slice
 * holds and how many rounds there are. Redis and Redlock cycles take a fraction of a millisecond:
 * a slice of a few hundred ms holds thousands. A ZooKeeper or etcd cycle is a quorum write or two
 * (milliseconds, and a JVM or a Raft heartbeat can stall one): in the default time per subject a
 * slice held 90–150 cycles, and one run's per-round ratios spread from 0.64 to 1.18 — wider than
 * any target's margin. Those backends get more time and more rounds, the same for every subject of
 * the backend, so no subject is favoured.
 */
import type { Backend } from './subjects.js';

/** Time and rounds of one backend's subjects. */
export interface MeasuringPlan {
  /** Measuring time per subject over all rounds, ms. */
  readonly maxMs: number;
  /** Interleaved rounds (slices per subject): a whole number of balanced orders, see `round-order.ts`. */
  readonly rounds: number;
}

/** Backends whose cycle takes milliseconds: their time per subject and their rounds are multiplied. */
export const SLOW_BACKEND_SCALING: Readonly<Partial<Record<Backend, { readonly time: number; readonly rounds: number }>>> = {
  zookeeper: { time: 4, rounds: 2 },
  etcd: { time: 4, rounds: 2 },
};

/**
 * The least number of rounds ≥ `rounds` in which `subjects` subjects take turns in a balanced
 * order: each subject first, and right after each other subject, equally often (a Williams design
 * repeats after n rounds for an even n and 2n for an odd one).
 */
export function balancedRounds(rounds: number, subjects: number): number {
  const wanted = Math.max(1, Math.round(rounds));
  if (subjects <= 1) return wanted;
  const period = subjects % 2 === 1 ? 2 * subjects : subjects;
  return Math.ceil(wanted / period) * period;
}

/** The plan for `subjects` subjects of `backend`, from the run's time per subject (ms) and rounds. */
export function measuringPlan(backend: Backend, subjects: number, maxMs: number, rounds: number): MeasuringPlan {
  const scaling = SLOW_BACKEND_SCALING[backend] ?? { time: 1, rounds: 1 };
  return { maxMs: maxMs * scaling.time, rounds: balancedRounds(rounds * scaling.rounds, subjects) };
}
