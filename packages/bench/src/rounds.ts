/**
 * Interleaved rounds: on a shared, noisy 2-core machine a long run of A then a long run of B
 * compares A's quiet minute with B's busy one. Instead every subject of a backend keeps its
 * connection open and they take turns in short slices, in an order that changes every round so
 * that nobody is always first after a pause nor always right after the same subject (see
 * `round-order.ts`); throughput is the median over rounds, and a ratio is the median of the
 * per-round ratios (each from slices run seconds apart).
 */
import { roundOrder } from './round-order.js';
import { round, summarize } from './stats.js';
import { subjectFields, type Subject, type SubjectFields } from './subjects.js';

/** An open measurement loop for one subject. */
export interface SliceRunner {
  /** Runs cycles for at most `maxMs` and `maxCycles`; resolves each cycle's latency, ms. */
  slice(maxMs: number, maxCycles: number): Promise<number[]>;
  close(): Promise<void>;
}

/** Bounds of an interleaved measurement. */
export interface RoundsOptions {
  /** Rounds (slices per subject). */
  readonly rounds: number;
  /** Length of one slice, ms. */
  readonly sliceMs: number;
  /** Most cycles per slice. */
  readonly maxCyclesPerSlice: number;
}

/** One subject's slices. */
export interface RoundsMeasurement {
  readonly subject: Subject;
  /** Every cycle's latency over all slices, ms. */
  readonly samples: number[];
  /** Cycles per second of each completed slice, in round order (index i = round i while the subject ran). */
  readonly roundOpsPerSec: number[];
  /** Total time spent in slices, s. */
  seconds: number;
}

/** Median of `values` (NaN when empty). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Smallest and largest per-round ratio, and how many rounds were paired. */
export interface RoundRange {
  readonly min: number;
  readonly max: number;
  readonly rounds: number;
}

/**
 * ours / other from interleaved rounds: round i of one ran right next to round i of the other, so
 * the median of the per-round ratios cancels most of the machine's drift. Falls back to the ratio
 * of the medians when there are no rounds to pair.
 */
export function pairedRatio(
  ours: { readonly opsPerSec: number; readonly roundOpsPerSec?: readonly number[] },
  other: { readonly opsPerSec: number; readonly roundOpsPerSec?: readonly number[] },
): { ratio: number; roundRange?: RoundRange } {
  const ratio = round(unroundedPairedRatio(ours, other), 2);
  const perRound = perRoundRatios(ours, other);
  if (perRound.length < 2) return { ratio };
  return { ratio, roundRange: { min: round(Math.min(...perRound), 2), max: round(Math.max(...perRound), 2), rounds: perRound.length } };
}

/** {@link pairedRatio}'s ratio before it is rounded: what a target's verdict is decided on. */
export function unroundedPairedRatio(
  ours: { readonly opsPerSec: number; readonly roundOpsPerSec?: readonly number[] },
  other: { readonly opsPerSec: number; readonly roundOpsPerSec?: readonly number[] },
): number {
  const perRound = perRoundRatios(ours, other);
  return perRound.length < 2 ? ours.opsPerSec / other.opsPerSec : median(perRound);
}

// ours ÷ other in each round both ran.
function perRoundRatios(
  ours: { readonly roundOpsPerSec?: readonly number[] },
  other: { readonly roundOpsPerSec?: readonly number[] },
): number[] {
  const a = ours.roundOpsPerSec ?? [];
  const b = other.roundOpsPerSec ?? [];
  const perRound: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const base = b[i] ?? 0;
    if (base > 0) perRound.push((a[i] ?? 0) / base);
  }
  return perRound;
}

/**
 * Opens every subject, then runs `options.rounds` rounds of one slice each, in a balanced order (`roundOrder`).
 * A subject whose open or slice fails is reported through `onError` and leaves the rotation.
 */
export async function runInterleaved(
  subjects: readonly Subject[],
  open: (subject: Subject) => Promise<SliceRunner>,
  options: RoundsOptions,
  onError: (subject: Subject, error: unknown) => void,
): Promise<RoundsMeasurement[]> {
  const active: { measurement: RoundsMeasurement; runner: SliceRunner }[] = [];
  for (const subject of subjects) {
    try {
      active.push({ measurement: { subject, samples: [], roundOpsPerSec: [], seconds: 0 }, runner: await open(subject) });
    } catch (error) {
      onError(subject, error);
    }
  }
  const measurements = active.map((entry) => entry.measurement);
  try {
    for (let round = 0; round < options.rounds; round += 1) {
      const order = roundOrder(active.length, round).map((index) => active[index]);
      for (const entry of order) {
        if (entry === undefined || !active.includes(entry)) continue;
        try {
          const started = performance.now();
          const samples = await entry.runner.slice(options.sliceMs, options.maxCyclesPerSlice);
          const seconds = (performance.now() - started) / 1000;
          for (const sample of samples) entry.measurement.samples.push(sample);
          entry.measurement.seconds += seconds;
          // Every completed slice counts, an empty one as 0 ops/s, so round i pairs with round i.
          entry.measurement.roundOpsPerSec.push(seconds > 0 ? samples.length / seconds : 0);
        } catch (error) {
          onError(entry.measurement.subject, error);
          active.splice(active.indexOf(entry), 1);
          await entry.runner.close().catch(() => undefined);
        }
      }
    }
  } finally {
    await Promise.allSettled(active.map((entry) => entry.runner.close()));
  }
  return measurements.filter((measurement) => measurement.samples.length > 0);
}

/** The figures every interleaved throughput scenario reports for one subject. */
export interface ThroughputResult extends SubjectFields {
  /** Measured cycles. */
  readonly cycles: number;
  readonly seconds: number;
  /** Acquire + release cycles per second: the median over rounds. */
  readonly opsPerSec: number;
  /** The best round's cycles per second. */
  readonly bestOpsPerSec: number;
  /** Cycles per second of each round, in round order. */
  readonly roundOpsPerSec: readonly number[];
  /**
   * How many processes the rounds were measured in, one after the other (see `throughput-processes.ts`):
   * `roundOpsPerSec` then holds one block of equal length per process. Absent: one process.
   */
  readonly processes?: number;
  /** Latency of one acquire + release cycle over every round, ms. */
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** The {@link ThroughputResult} of one subject's slices. */
export function throughputResult(measurement: RoundsMeasurement): ThroughputResult {
  const { subject, samples, roundOpsPerSec } = measurement;
  const latency = summarize(samples);
  return {
    ...subjectFields(subject),
    cycles: samples.length,
    seconds: round(measurement.seconds),
    opsPerSec: round(median(roundOpsPerSec), 1),
    bestOpsPerSec: round(Math.max(...roundOpsPerSec), 1),
    roundOpsPerSec: roundOpsPerSec.map((value) => round(value, 1)),
    p50Ms: round(latency.p50),
    p90Ms: round(latency.p90),
    p99Ms: round(latency.p99),
    maxMs: round(latency.max),
  };
}

/** Runs a group measurement on one subject alone; rejects with its failure when it produced nothing. */
export async function runAlone<O, R>(
  runGroup: (subjects: readonly Subject[], options: O, onError: (subject: Subject, error: unknown) => void) => Promise<R[]>,
  subject: Subject,
  options: O,
): Promise<R> {
  let failure: unknown;
  const [result] = await runGroup([subject], options, (_, error) => {
    failure = error;
  });
  if (result === undefined) throw failure ?? new Error(`${subject.id}: no cycle completed`);
  return result;
}
