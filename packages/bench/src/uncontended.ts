/**
 * Scenario 1, uncontended: one client, acquire + release of one key in a loop, after a warm-up
 * (connections, scripts loaded, sessions opened, and the JIT given time to compile the hot path). The
 * subjects of one backend run interleaved in rounds (see rounds.ts); each slice is bounded by a cycle
 * count AND a time budget.
 */
import { randomUUID } from 'node:crypto';
import { runAlone, runInterleaved, throughputResult, type RoundsMeasurement, type SliceRunner, type ThroughputResult } from './rounds.js';
import type { Subject } from './subjects.js';

/** Bounds of one uncontended measurement. */
export interface UncontendedOptions {
  /** Most measured cycles per subject (over all rounds). */
  readonly maxCycles: number;
  /** Most measuring time per subject (over all rounds), ms. */
  readonly maxMs: number;
  /** Rounds the time and cycles are split into (default 1). */
  readonly rounds?: number;
  /** Unmeasured cycles first (default {@link UNCONTENDED_WARMUP_CYCLES}, at most maxCycles). */
  readonly warmupCycles?: number;
  /** The most time those take per subject, ms (default {@link UNCONTENDED_WARMUP_MS}, at least one slice's time). */
  readonly warmupMs?: number;
}

/**
 * Warm-up cycles per subject. V8 compiles a function with its optimizing compiler only after it has
 * run a while (its interrupt budget): a loop timed before that measures the interpreter, which
 * penalizes the implementation with the most JavaScript per cycle. A few hundred cycles were enough
 * for Redis, whose cycles are short, but a ZooKeeper or etcd cycle takes milliseconds, and their
 * client CPU per cycle keeps falling for the first ~1,500 cycles (`bench:warm-up` shows the curve).
 */
export const UNCONTENDED_WARMUP_CYCLES = 2_000;
/** The time bound of that warm-up per subject, ms: 2,000 cycles of 5–8 ms, the slowest subjects'. */
export const UNCONTENDED_WARMUP_MS = 15_000;

/** One subject's uncontended figures. */
export type UncontendedResult = ThroughputResult;

/** Opens `subject` for uncontended slices on one key of its own, after `warmupCycles`. */
export async function openUncontended(subject: Subject, warmupCycles: number, warmupMs: number): Promise<SliceRunner> {
  const session = await subject.open();
  const key = `uncontended:${randomUUID()}`;
  try {
    const warmupDeadline = performance.now() + warmupMs;
    for (let i = 0; i < warmupCycles && performance.now() < warmupDeadline; i += 1) await (await session.lock(key, 5_000))();
  } catch (error) {
    await session.close().catch(() => undefined);
    throw error;
  }
  return {
    async slice(maxMs, maxCycles) {
      const samples: number[] = [];
      const deadline = performance.now() + maxMs;
      while (samples.length < maxCycles && performance.now() < deadline) {
        const t0 = performance.now();
        await (await session.lock(key, 5_000))();
        samples.push(performance.now() - t0);
      }
      return samples;
    },
    close: () => session.close(),
  };
}

/** Builds the result of one subject's interleaved slices. */
export const uncontendedResult: (measurement: RoundsMeasurement) => UncontendedResult = throughputResult;

/**
 * The slices of `subjects` uncontended, interleaved in `options.rounds` rounds (give the subjects of
 * ONE backend, so they share the same server). Failures go to `onError`.
 */
export function uncontendedRounds(
  subjects: readonly Subject[],
  options: UncontendedOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<RoundsMeasurement[]> {
  const rounds = options.rounds ?? 1;
  const warmup = Math.min(options.warmupCycles ?? UNCONTENDED_WARMUP_CYCLES, options.maxCycles);
  const warmupMs = Math.max(options.warmupMs ?? UNCONTENDED_WARMUP_MS, options.maxMs / rounds);
  return runInterleaved(
    subjects,
    (subject) => openUncontended(subject, warmup, warmupMs),
    { rounds, sliceMs: options.maxMs / rounds, maxCyclesPerSlice: Math.max(1, Math.floor(options.maxCycles / rounds)) },
    onError,
  );
}

/** {@link uncontendedRounds}, as each subject's figures. */
export async function runUncontendedGroup(
  subjects: readonly Subject[],
  options: UncontendedOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<UncontendedResult[]> {
  return (await uncontendedRounds(subjects, options, onError)).map(uncontendedResult);
}

/** Measures one subject uncontended (one round); rejects on failure. */
export function runUncontended(subject: Subject, options: UncontendedOptions): Promise<UncontendedResult> {
  return runAlone(runUncontendedGroup, subject, options);
}
