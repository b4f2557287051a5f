/**
 * `pnpm bench`: every scenario against every subject in one run; writes bench-results/latest.json
 * and docs/BENCHMARKS.md (at the repository root). Bounds, from the environment:
 * BENCH_SECONDS (per measurement; scenarios: uncontended, 64 keys, contention; memory gets twice that and at most 100k cycles, default 3), BENCH_CYCLES (most uncontended cycles, default
 * 20000), BENCH_CLIENTS (contending processes, default 4), BENCH_ONLY (comma-separated subject-id
 * substrings to run a subset).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { runContention, type ContentionResult } from './contention.js';
import { runMemory, type MemoryResult } from './memory.js';
import { runParallelKeys, type ParallelKeysResult } from './parallel-keys.js';
import { checkTargets, computeRatios, machineInfo, renderMarkdown, type BenchResults } from './report.js';
import { subjects } from './subjects.js';
import { runUncontended, type UncontendedResult } from './uncontended.js';
import { runWaiters, type WaitersResult } from './waiters.js';

const env = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return value;
};
const seconds = env('BENCH_SECONDS', 3);
const maxCycles = env('BENCH_CYCLES', 20_000);
const clients = env('BENCH_CLIENTS', 4);
const only = (process.env['BENCH_ONLY'] ?? '').split(',').filter((part) => part !== '');
const chosen = subjects().filter((subject) => only.length === 0 || only.some((part) => subject.id.includes(part)));

const startedAt = new Date().toISOString();
const errors: Record<string, string> = {};
const describe = (cause: unknown): string => (cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause));

const uncontended: UncontendedResult[] = [];
for (const subject of chosen) {
  try {
    const result = await runUncontended(subject, { maxCycles, maxMs: seconds * 1000 });
    uncontended.push(result);
    console.log(`uncontended ${subject.id}: ${result.opsPerSec} ops/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms (${result.cycles} cycles)`);
  } catch (cause) {
    errors[`uncontended ${subject.id}`] = describe(cause);
    console.log(`uncontended ${subject.id}: FAILED ${describe(cause)}`);
  }
}

const parallelKeys: ParallelKeysResult[] = [];
for (const subject of chosen) {
  try {
    const result = await runParallelKeys(subject, { keys: 64, maxCyclesPerKey: maxCycles, maxMs: seconds * 1000 });
    parallelKeys.push(result);
    console.log(`64 keys ${subject.id}: ${result.opsPerSec} ops/s aggregate, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms (${result.cycles} cycles)`);
  } catch (cause) {
    errors[`64 keys ${subject.id}`] = describe(cause);
    console.log(`64 keys ${subject.id}: FAILED ${describe(cause)}`);
  }
}

const contention: ContentionResult[] = [];
for (const subject of chosen.filter((s) => s.waits)) {
  try {
    const result = await runContention(subject, { clients, maxMs: seconds * 1000, maxAcquisitionsPerClient: maxCycles });
    contention.push(result);
    console.log(
      `contention ${subject.id}: ${result.acquisitionsPerSec} acq/s, hand-off p50 ${result.handoffP50Ms} ms p99 ${result.handoffP99Ms} ms, ` +
        `other client ${(result.differentClientShare * 100).toFixed(0)} %, waiter next ${(result.waiterWinShare * 100).toFixed(0)} %, max wait ${result.maxWaitMs} ms, per client ${result.perClient.join('/')}, failed waits ${result.failures}`,
    );
  } catch (cause) {
    errors[`contention ${subject.id}`] = describe(cause);
    console.log(`contention ${subject.id}: FAILED ${describe(cause)}`);
  }
}

const waiters: WaitersResult[] = [];
for (const subject of chosen.filter((s) => s.waits)) {
  try {
    const result = await runWaiters(subject, { waiters: 100, waitMs: 10_000 });
    waiters.push(result);
    console.log(`100 waiters ${subject.id}: ${result.heapPerWaiterBytes} B heap per waiter, drain ${result.drainPerSec} grants/s, ${result.granted} granted`);
  } catch (cause) {
    errors[`100 waiters ${subject.id}`] = describe(cause);
    console.log(`100 waiters ${subject.id}: FAILED ${describe(cause)}`);
  }
}

const memory: MemoryResult[] = [];
for (const subject of chosen.filter((s) => s.kind === 'fencelock')) {
  try {
    const result = await runMemory(subject, { maxCycles: 100_000, maxMs: seconds * 2_000 });
    memory.push(result);
    console.log(`memory ${subject.id}: ${result.cycles} cycles, heap ${(result.heapBeforeBytes / 2 ** 20).toFixed(1)} → ${(result.heapAfterBytes / 2 ** 20).toFixed(1)} MiB, ${result.growthPerCycleBytes} B/cycle`);
  } catch (cause) {
    errors[`memory ${subject.id}`] = describe(cause);
    console.log(`memory ${subject.id}: FAILED ${describe(cause)}`);
  }
}

const results: BenchResults = {
  startedAt,
  machine: machineInfo(),
  settings: { secondsPerMeasurement: seconds, maxCycles, contendingProcesses: clients, holdMs: 1, ttlMs: 10_000 },
  uncontended,
  parallelKeys,
  contention,
  waiters,
  memory,
  ratios: computeRatios(uncontended, contention, parallelKeys),
  targets: checkTargets(uncontended, contention),
  errors,
};
const packageDir = new URL('../', import.meta.url);
await mkdir(new URL('bench-results/', packageDir), { recursive: true });
const jsonPath = new URL('bench-results/latest.json', packageDir);
const docsPath = new URL('../../docs/BENCHMARKS.md', packageDir);
await writeFile(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
await writeFile(docsPath, renderMarkdown(results));
console.log(`\nwrote ${fileURLToPath(jsonPath)} and ${fileURLToPath(docsPath)}`);
for (const ratio of results.ratios) console.log(`${ratio.backend.padEnd(9)} ${ratio.scenario.padEnd(31)} ${ratio.ours} / ${ratio.baseline}: ${ratio.ratio}`);
for (const target of results.targets) console.log(`${target.met ? 'met    ' : 'MISSED '} ${target.target}: ${target.measured}`);
