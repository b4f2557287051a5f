/**
 * Scenario 3a, parallel keys: one client (one session), K keys (default 64) each looped
 * acquire + release concurrently → aggregate ops/s and per-cycle latency. The subjects of one
 * backend run interleaved in rounds (see rounds.ts); each slice is bounded by cycles per key AND time.
 */
import { randomUUID } from 'node:crypto';
import { median, runInterleaved, type RoundsMeasurement, type SliceRunner } from './rounds.js';
import { round, summarize } from './stats.js';
import type { Subject } from './subjects.js';

/** Bounds of one parallel-keys measurement. */
export interface ParallelKeysOptions {
  /** Keys looped concurrently (default 64). */
  readonly keys?: number;
  /** Most cycles per key (over all rounds). */
  readonly maxCyclesPerKey: number;
  /** Most measuring time per subject (over all rounds), ms. */
  readonly maxMs: number;
  /** Rounds the time and cycles are split into (default 1). */
  readonly rounds?: number;
}

/** One subject's parallel-keys figures. */
export interface ParallelKeysResult {
  readonly subject: string;
  readonly backend: Subject['backend'];
  readonly kind: Subject['kind'];
  readonly label: string;
  readonly keys: number;
  readonly cycles: number;
  readonly seconds: number;
  /** Aggregate acquire + release cycles per second over every key: the median over rounds. */
  readonly opsPerSec: number;
  /** The best round's aggregate cycles per second. */
  readonly bestOpsPerSec: number;
  /** Aggregate cycles per second of each round, in round order. */
  readonly roundOpsPerSec: readonly number[];
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * Opens `subject` for slices of `keyCount` concurrent loops, after one cycle per key and an unmeasured
 * slice of at most `warmupMs` and `warmupCyclesPerKey`.
 */
export async function openParallelKeys(subject: Subject, keyCount: number, warmupMs: number, warmupCyclesPerKey: number): Promise<SliceRunner> {
  const session = await subject.open();
  const run = randomUUID();
  const keys = Array.from({ length: keyCount }, (_, index) => `parallel:${run}:${index}`);
  // maxCycles is per key here.
  const slice = async (maxMs: number, maxCyclesPerKey: number): Promise<number[]> => {
    const samples: number[] = [];
    const deadline = performance.now() + maxMs;
    await Promise.all(
      keys.map(async (key) => {
        for (let cycle = 0; cycle < maxCyclesPerKey && performance.now() < deadline; cycle += 1) {
          const t0 = performance.now();
          await (await session.lock(key, 5_000))();
          samples.push(performance.now() - t0);
        }
      }),
    );
    return samples;
  };
  try {
    // One cycle per key (connections, scripts, parents), then a slice for the JIT to settle.
    await slice(Number.POSITIVE_INFINITY, 1);
    await slice(warmupMs, warmupCyclesPerKey);
  } catch (error) {
    await session.close().catch(() => undefined);
    throw error;
  }
  return { slice, close: () => session.close() };
}

function parallelKeysResult(measurement: RoundsMeasurement, keys: number): ParallelKeysResult {
  const { subject, samples, roundOpsPerSec } = measurement;
  const latency = summarize(samples);
  return {
    subject: subject.id,
    backend: subject.backend,
    kind: subject.kind,
    label: subject.label,
    keys,
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

/** Measures `subjects` (of ONE backend) on many keys at once, interleaved in rounds. */
export async function runParallelKeysGroup(
  subjects: readonly Subject[],
  options: ParallelKeysOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<ParallelKeysResult[]> {
  const keyCount = options.keys ?? 64;
  const rounds = options.rounds ?? 1;
  const cyclesPerSlice = Math.max(1, Math.floor(options.maxCyclesPerKey / rounds));
  const measurements = await runInterleaved(
    subjects,
    (subject) => openParallelKeys(subject, keyCount, options.maxMs / rounds / 2, cyclesPerSlice),
    { rounds, sliceMs: options.maxMs / rounds, maxCyclesPerSlice: cyclesPerSlice },
    onError,
  );
  return measurements.map((measurement) => parallelKeysResult(measurement, keyCount));
}

/** Measures one subject on many keys (one round); rejects on failure. */
export async function runParallelKeys(subject: Subject, options: ParallelKeysOptions): Promise<ParallelKeysResult> {
  let failure: unknown;
  const [result] = await runParallelKeysGroup([subject], options, (_, error) => {
    failure = error;
  });
  if (result === undefined) throw failure ?? new Error(`${subject.id}: no cycle completed`);
  return result;
}
