/**
 * Scenario 4, memory: heap used after many acquire + release cycles against before (after a warm-up,
 * both after a full GC). Growth per cycle near 0 means nothing is retained per lock. Bounded by
 * cycles (the 100k) AND time.
 */
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { round } from './stats.js';
import { subjectFields, type Subject, type SubjectFields } from './subjects.js';

/** Bounds of one memory measurement. */
export interface MemoryOptions {
  readonly maxCycles: number;
  readonly maxMs: number;
  /** Cycles before the first heap reading (default min(1000, maxCycles)). */
  readonly warmupCycles?: number;
}

/** One subject's heap figures. */
export interface MemoryResult extends SubjectFields {
  readonly cycles: number;
  readonly heapBeforeBytes: number;
  readonly heapAfterBytes: number;
  /** (after − before) / cycles, bytes; noise of a few bytes either way is GC jitter. */
  readonly growthPerCycleBytes: number;
}

let gcFunction: (() => void) | undefined;

/** A full garbage collection (exported for the waiters scenario), exposing `gc` at runtime when node was not started with --expose-gc. */
export function fullGc(): void {
  if (gcFunction === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (exposed !== undefined) gcFunction = exposed;
    else {
      setFlagsFromString('--expose-gc');
      gcFunction = runInNewContext('gc') as () => void;
    }
  }
  gcFunction();
  gcFunction();
}

/** Measures heap growth of `subject` over acquire + release cycles. */
export async function runMemory(subject: Subject, options: MemoryOptions): Promise<MemoryResult> {
  const session = await subject.open();
  try {
    const key = `memory:${randomUUID()}`;
    const warmup = options.warmupCycles ?? Math.min(1_000, options.maxCycles);
    for (let i = 0; i < warmup; i += 1) await (await session.lock(key, 5_000))();
    await new Promise((resolve) => setTimeout(resolve, 50)); // let pending callbacks settle
    fullGc();
    const before = process.memoryUsage().heapUsed;
    const deadline = performance.now() + options.maxMs;
    let cycles = 0;
    while (cycles < options.maxCycles && performance.now() < deadline) {
      await (await session.lock(key, 5_000))();
      cycles += 1;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    fullGc();
    const after = process.memoryUsage().heapUsed;
    return {
      ...subjectFields(subject),
      cycles,
      heapBeforeBytes: before,
      heapAfterBytes: after,
      growthPerCycleBytes: cycles > 0 ? round((after - before) / cycles, 1) : 0,
    };
  } finally {
    await session.close();
  }
}
