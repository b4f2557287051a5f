/**
 * Scenario 3a, parallel keys: one client (one session), K keys (default 64) each looped
 * acquire + release concurrently → aggregate ops/s and per-cycle latency. Bounded by cycles per key
 * AND a wall-clock budget.
 */
import { randomUUID } from 'node:crypto';
import { round, summarize } from './stats.js';
import type { Subject } from './subjects.js';

/** Bounds of one parallel-keys measurement. */
export interface ParallelKeysOptions {
  /** Keys looped concurrently (default 64). */
  readonly keys?: number;
  /** Most cycles per key. */
  readonly maxCyclesPerKey: number;
  /** Most measuring time, ms. */
  readonly maxMs: number;
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
  /** Aggregate acquire + release cycles per second over every key. */
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Measures `subject` on many keys at once. */
export async function runParallelKeys(subject: Subject, options: ParallelKeysOptions): Promise<ParallelKeysResult> {
  const keyCount = options.keys ?? 64;
  const session = await subject.open();
  try {
    const run = randomUUID();
    const keys = Array.from({ length: keyCount }, (_, index) => `parallel:${run}:${index}`);
    await Promise.all(keys.map(async (key) => (await session.lock(key, 5_000))())); // warm-up: one cycle per key
    const samples: number[] = [];
    const started = performance.now();
    const deadline = started + options.maxMs;
    await Promise.all(
      keys.map(async (key) => {
        for (let cycle = 0; cycle < options.maxCyclesPerKey && performance.now() < deadline; cycle += 1) {
          const t0 = performance.now();
          await (await session.lock(key, 5_000))();
          samples.push(performance.now() - t0);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const latency = summarize(samples);
    return {
      subject: subject.id,
      backend: subject.backend,
      kind: subject.kind,
      label: subject.label,
      keys: keyCount,
      cycles: samples.length,
      seconds: round(seconds),
      opsPerSec: round(samples.length / seconds, 1),
      p50Ms: round(latency.p50),
      p99Ms: round(latency.p99),
    };
  } finally {
    await session.close();
  }
}
