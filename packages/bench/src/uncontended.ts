/**
 * Scenario 1, uncontended: one client, acquire + release of one key in a loop, after a short
 * warm-up (connections, scripts loaded, sessions opened). The subjects of one backend run
 * interleaved in rounds (see rounds.ts); each slice is bounded by a cycle count AND a time budget.
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
  /** Unmeasured cycles first, within the time of one slice (default min(500, maxCycles): enough for the JIT to settle). */
  readonly warmupCycles?: number;
}

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
 * Measures `subjects` uncontended, interleaved in `options.rounds` rounds (give the subjects of
 * ONE backend, so they share the same server). Failures go to `onError`.
 */
export async function runUncontendedGroup(
  subjects: readonly Subject[],
  options: UncontendedOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<UncontendedResult[]> {
  const rounds = options.rounds ?? 1;
  const warmup = options.warmupCycles ?? Math.min(500, options.maxCycles);
  const measurements = await runInterleaved(
    subjects,
    (subject) => openUncontended(subject, warmup, options.maxMs / rounds),
    { rounds, sliceMs: options.maxMs / rounds, maxCyclesPerSlice: Math.max(1, Math.floor(options.maxCycles / rounds)) },
    onError,
  );
  return measurements.map(uncontendedResult);
}

/** Measures one subject uncontended (one round); rejects on failure. */
export function runUncontended(subject: Subject, options: UncontendedOptions): Promise<UncontendedResult> {
  return runAlone(runUncontendedGroup, subject, options);
}
