/**
 * One subject's sequential acquire + release loop for `bench:perf-split`, run under `perf record` by
 * perf-split.ts; argv: `<subject id> <cycles> <warm-up cycles>`. It opens the subject, warms it up,
 * then runs the measured cycles between two readings of the monotonic clock (the clock perf stamps
 * its samples with, `perf record -k CLOCK_MONOTONIC`), and prints one JSON line
 * ({@link PerfWindow}) that tells perf-split.ts which samples are the measured cycles'.
 */
import { randomUUID } from 'node:crypto';
import { lockCycle } from './allocation.js';
import { subjectById } from './subjects.js';

/** The measured window, as the worker prints it. */
export interface PerfWindow {
  readonly pid: number;
  /** CLOCK_MONOTONIC at the first and after the last measured cycle, ns (decimal strings: beyond 2^53). */
  readonly startNs: string;
  readonly endNs: string;
  readonly cycles: number;
  /** User + system CPU of the whole process over the window, µs. */
  readonly cpuMicros: number;
}

const [subjectId, cyclesText, warmupText] = process.argv.slice(2);
if (subjectId === undefined || cyclesText === undefined || warmupText === undefined) {
  throw new Error('usage: perf-split-worker <subject id> <cycles> <warm-up cycles>');
}
const session = await subjectById(subjectId).open();
try {
  const cycle = lockCycle(session, `perf-split:${randomUUID()}`);
  for (let i = 0; i < Number(warmupText); i += 1) await cycle();
  const cycles = Number(cyclesText);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < cycles; i += 1) await cycle();
  const end = process.hrtime.bigint();
  const used = process.cpuUsage(cpu);
  const window: PerfWindow = { pid: process.pid, startNs: String(start), endNs: String(end), cycles, cpuMicros: used.user + used.system };
  console.log(JSON.stringify(window));
} finally {
  await session.close();
}
