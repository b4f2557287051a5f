/**
 * `pnpm --filter @fencelock/bench bench:perf-split`: where each subject's client CPU per cycle goes,
 * down to the kernel (see `perf-split.ts`), one subject at a time, on the shared servers. Prints the
 * tables; writes nothing. Needs Linux `perf`. Settings from the environment: BENCH_SUBJECTS (subject
 * ids, comma-separated; default: the Redis subjects of scenario 1), BENCH_CYCLES (measured cycles per
 * subject, default 20000), BENCH_WARMUP (cycles before them, default 3000).
 */
import { listSetting, nonNegativeSetting, positiveSetting } from './cli-env.js';
import { perfSplitMarkdown, runPerfSplit, type PerfSplit } from './perf-split.js';
import { subjectById } from './subjects.js';

const DEFAULT_SUBJECTS = ['redis/fencelock', 'redis/protocol-twin', 'redis/raw-ioredis', 'redis/node-redlock', 'redis/redis-semaphore-mutex'];

const ids = listSetting('BENCH_SUBJECTS');
const subjects = (ids.length > 0 ? ids : DEFAULT_SUBJECTS).map((id) => subjectById(id));
const cycles = Math.round(positiveSetting('BENCH_CYCLES', 20_000));
const warmupCycles = Math.round(nonNegativeSetting('BENCH_WARMUP', 3_000));
const results: PerfSplit[] = [];
for (const subject of subjects) {
  console.error(`measuring ${subject.id} (${cycles} cycles)…`);
  results.push(await runPerfSplit(subject, { cycles, warmupCycles }));
}
const settings = ['BENCH_SUBJECTS', 'BENCH_CYCLES', 'BENCH_WARMUP']
  .filter((name) => process.env[name] !== undefined)
  .map((name) => `${name}=${process.env[name] ?? ''} `)
  .join('');
console.log(perfSplitMarkdown(results, `${settings}pnpm --filter @fencelock/bench bench:perf-split`).join('\n'));
