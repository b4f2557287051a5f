/**
 * Scenario 3a, parallel keys: one client (one session), K keys (default 64) each looped
 * acquire + release concurrently → aggregate ops/s and per-cycle latency. The subjects of one
 * backend run interleaved in rounds (see rounds.ts); each slice is bounded by cycles per key AND time.
 */
import { randomUUID } from 'node:crypto';
import { runAlone, runInterleaved, throughputResult, type RoundsMeasurement, type SliceRunner, type ThroughputResult } from './rounds.js';
import type { Subject } from './subjects.js';
import { UNCONTENDED_WARMUP_CYCLES, UNCONTENDED_WARMUP_MS } from './uncontended.js';

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

/** One subject's parallel-keys figures: ops/s are aggregate over every key. */
export interface ParallelKeysResult extends ThroughputResult {
  readonly keys: number;
}

/**
 * Opens `subject` for slices of `keyCount` concurrent loops, after one cycle per key and unmeasured
 * slices of at most `warmupMs` and `warmupCyclesPerKey` each: one, and more until
 * {@link UNCONTENDED_WARMUP_CYCLES} cycles ran in all or {@link UNCONTENDED_WARMUP_MS} passed.
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
    // One cycle per key (connections, scripts, parents), then a slice for the JIT to settle, and more
    // until the subject has run as many cycles as an uncontended warm-up (within its bound): a
    // process of its own starts with nothing compiled (see `UNCONTENDED_WARMUP_CYCLES`).
    const deadline = performance.now() + UNCONTENDED_WARMUP_MS;
    let warmed = (await slice(Number.POSITIVE_INFINITY, 1)).length;
    warmed += (await slice(warmupMs, warmupCyclesPerKey)).length;
    while (warmed < UNCONTENDED_WARMUP_CYCLES && performance.now() < deadline) {
      warmed += (await slice(Math.min(warmupMs, deadline - performance.now()), warmupCyclesPerKey)).length;
    }
  } catch (error) {
    await session.close().catch(() => undefined);
    throw error;
  }
  return { slice, close: () => session.close() };
}

/** {@link ThroughputResult} of one subject's parallel-keys slices, with the number of keys. */
export function parallelKeysResult(measurement: RoundsMeasurement, keys: number): ParallelKeysResult {
  return { ...throughputResult(measurement), keys };
}

/** The slices of `subjects` (of ONE backend) on many keys at once, interleaved in rounds. */
export function parallelKeysRounds(
  subjects: readonly Subject[],
  options: ParallelKeysOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<RoundsMeasurement[]> {
  const keyCount = options.keys ?? 64;
  const rounds = options.rounds ?? 1;
  const cyclesPerSlice = Math.max(1, Math.floor(options.maxCyclesPerKey / rounds));
  return runInterleaved(
    subjects,
    (subject) => openParallelKeys(subject, keyCount, options.maxMs / rounds / 2, cyclesPerSlice),
    { rounds, sliceMs: options.maxMs / rounds, maxCyclesPerSlice: cyclesPerSlice },
    onError,
  );
}

/** {@link parallelKeysRounds}, as each subject's figures. */
export async function runParallelKeysGroup(
  subjects: readonly Subject[],
  options: ParallelKeysOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<ParallelKeysResult[]> {
  return (await parallelKeysRounds(subjects, options, onError)).map((measurement) => parallelKeysResult(measurement, options.keys ?? 64));
}

/** Measures one subject on many keys (one round); rejects on failure. */
export function runParallelKeys(subject: Subject, options: ParallelKeysOptions): Promise<ParallelKeysResult> {
  return runAlone(runParallelKeysGroup, subject, options);
}
