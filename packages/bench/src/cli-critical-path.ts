/**
 * `pnpm --filter @fencelock/bench bench:critical-path`: where the wall time of an uncontended acquire
 * + release goes, call by call (see `critical-path.ts`), for each backend's subjects interleaved, on
 * the shared servers (`pnpm infra:up`). Prints the table; writes nothing. Settings from the
 * environment: BENCH_SUBJECTS (subject ids, comma-separated; default: every uncontended subject of
 * Redis, Redlock, ZooKeeper and etcd), BENCH_ROUNDS (default 5), BENCH_CYCLES (measured cycles per
 * subject per round, default 400), BENCH_WARMUP (cycles before them, default 2000), BENCH_OWN_TURNS
 * (`1`: each call starts in a turn of the event loop of its own, not in the previous call's
 * continuation), BENCH_PLACEMENT (`apart`: the client and the servers each on CPUs of their own; by
 * default they share every CPU, see `cpu-placement.ts`).
 */
import { criticalPathMarkdown, measureCriticalPaths, type CriticalPath } from './critical-path.js';
import { listSetting, nonNegativeSetting, positiveSetting } from './cli-env.js';
import { benchPlacement } from './cpu-placement.js';
import { subjectById, subjects as allSubjects, type Subject } from './subjects.js';

const WIRE_BACKENDS = new Set(['redis', 'redlock', 'zookeeper', 'etcd']);

const ids = listSetting('BENCH_SUBJECTS');
const chosen: Subject[] =
  ids.length > 0
    ? ids.map((id) => subjectById(id))
    : allSubjects().filter((subject) => WIRE_BACKENDS.has(subject.backend) && subject.contentionOnly !== true && subject.inProcess !== true);
const options = {
  rounds: Math.round(positiveSetting('BENCH_ROUNDS', 5)),
  cyclesPerRound: Math.round(positiveSetting('BENCH_CYCLES', 400)),
  warmupCycles: Math.round(nonNegativeSetting('BENCH_WARMUP', 2_000)),
  maxSliceMs: 20_000,
  ownTurns: process.env.BENCH_OWN_TURNS === '1',
};
// BENCH_PLACEMENT=apart: the client and the servers on CPUs of their own (see cpu-placement.ts).
const placement = benchPlacement();
console.error(placement.description);
const results: CriticalPath[] = [];
// One backend at a time: its subjects share its servers, and take turns on them.
for (const backend of [...new Set(chosen.map((subject) => subject.backend))]) {
  const group = chosen.filter((subject) => subject.backend === backend);
  console.error(`measuring ${group.map((subject) => subject.id).join(', ')}…`);
  results.push(...(await measureCriticalPaths(group, options)));
}
placement.restore();
const settings = ['BENCH_SUBJECTS', 'BENCH_ROUNDS', 'BENCH_CYCLES', 'BENCH_WARMUP', 'BENCH_OWN_TURNS', 'BENCH_PLACEMENT']
  .filter((name) => process.env[name] !== undefined)
  .map((name) => `${name}=${process.env[name] ?? ''} `)
  .join('');
console.log([`CPUs: ${placement.description}.`, '', ...criticalPathMarkdown(results, `${settings}pnpm --filter @fencelock/bench bench:critical-path`)].join('\n'));
