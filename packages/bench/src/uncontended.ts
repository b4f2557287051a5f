/**
 * Scenario 1, uncontended: one client, acquire + release of one key in a loop. Bounded by a cycle
 * count AND a wall-clock budget, whichever ends first, after a short warm-up (connections, scripts
 * loaded, sessions opened).
 */
import { randomUUID } from 'node:crypto';
import { round, summarize } from './stats.js';
import type { Subject } from './subjects.js';

/** Bounds of one uncontended measurement. */
export interface UncontendedOptions {
  /** Most measured cycles. */
  readonly maxCycles: number;
  /** Most measuring time, in ms. */
  readonly maxMs: number;
  /** Unmeasured cycles first (default min(50, maxCycles)). */
  readonly warmupCycles?: number;
}

/** One subject's uncontended figures. */
export interface UncontendedResult {
  readonly subject: string;
  readonly backend: Subject['backend'];
  readonly kind: Subject['kind'];
  readonly label: string;
  /** Measured cycles. */
  readonly cycles: number;
  readonly seconds: number;
  /** Acquire + release cycles per second. */
  readonly opsPerSec: number;
  /** Latency of one acquire + release cycle, ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Measures `subject` uncontended. */
export async function runUncontended(subject: Subject, options: UncontendedOptions): Promise<UncontendedResult> {
  const session = await subject.open();
  try {
    const key = `uncontended:${randomUUID()}`;
    const warmup = options.warmupCycles ?? Math.min(50, options.maxCycles);
    const warmupDeadline = performance.now() + options.maxMs;
    for (let i = 0; i < warmup && performance.now() < warmupDeadline; i += 1) await (await session.lock(key, 5_000))();
    const samples: number[] = [];
    const started = performance.now();
    const deadline = started + options.maxMs;
    while (samples.length < options.maxCycles && performance.now() < deadline) {
      const t0 = performance.now();
      await (await session.lock(key, 5_000))();
      samples.push(performance.now() - t0);
    }
    const seconds = (performance.now() - started) / 1000;
    const latency = summarize(samples);
    return {
      subject: subject.id,
      backend: subject.backend,
      kind: subject.kind,
      label: subject.label,
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
