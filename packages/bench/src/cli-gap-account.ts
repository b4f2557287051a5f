/**
 * `pnpm --filter @fencelock/bench bench:gap-account`: each uncontended throughput target's gap in µs
 * per cycle, cut into client CPU, server and the rest, and into requests and library (see
 * `gap-account.ts`), on the shared servers (`pnpm infra:up`). Prints the tables; writes nothing.
 * Settings from the environment: BENCH_BACKENDS (comma-separated; default redis, redlock, zookeeper,
 * etcd), BENCH_ROUNDS (default 30), BENCH_SLICE_MS (default 200 for Redis and Redlock, 500 for
 * ZooKeeper and etcd, whose cycles take milliseconds), BENCH_WARMUP (cycles per subject first,
 * default 3000), BENCH_KEYS (concurrent loops on distinct keys, default 1; 64 is scenario 3a's).
 */
import { redisUrlsOf } from './bench-servers.js';
import { listSetting, nonNegativeSetting, positiveSetting } from './cli-env.js';
import { gapAccount, gapAccountMarkdown, measureCycleCosts, type CycleCost, type GapAccount, type ServerReaders } from './gap-account.js';
import { PROTOCOL_TWINS, THROUGHPUT_TARGETS } from './performance-targets.js';
import { startedServerPids, type ServiceName } from '@fencelock/test-infra';
import { processCpuMicros, redisServerMicros } from './server-counters.js';
import { SCRIPT_COMMANDS, subjectById } from './subjects.js';

const chosen = listSetting('BENCH_BACKENDS');
const backends = chosen.length > 0 ? chosen : ['redis', 'redlock', 'zookeeper', 'etcd'];
const rounds = Math.round(positiveSetting('BENCH_ROUNDS', 30));
const warmupCycles = Math.round(nonNegativeSetting('BENCH_WARMUP', 3_000));
const keys = Math.round(positiveSetting('BENCH_KEYS', 1));

// The CPU of the servers test-infra started (none when they are someone else's: it then shows as —),
// and what Redis spent running the commands.
function servers(backend: string): ServerReaders {
  const pids = startedServerPids(undefined, [backend as ServiceName]);
  const urls = redisUrlsOf(backend);
  return {
    cpu: pids.length === 0 ? undefined : processCpuMicros(pids),
    commands: urls === undefined ? undefined : redisServerMicros(urls, SCRIPT_COMMANDS),
  };
}

const costs: CycleCost[] = [];
const accounts: GapAccount[] = [];
let failed = false;
for (const backend of backends) {
  const targets = THROUGHPUT_TARGETS.filter(([b]) => b === backend);
  const twin = PROTOCOL_TWINS[backend];
  if (targets.length === 0 || twin === undefined) throw new Error(`no throughput target on backend "${backend}"`);
  const ours = targets[0]?.[1] ?? '';
  const ids = [ours, twin, ...targets.map(([, , baseline]) => baseline)];
  const subjects = ids.map((id) => subjectById(id));
  const slow = backend === 'zookeeper' || backend === 'etcd';
  const sliceMs = positiveSetting('BENCH_SLICE_MS', slow ? 500 : 200);
  console.error(`measuring ${ids.join(', ')} (${rounds} rounds of ${sliceMs} ms)…`);
  const measured = await measureCycleCosts(
    subjects,
    { keys, rounds, sliceMs, warmupCycles, warmupMs: slow ? 30_000 : 15_000 },
    servers(backend),
    (subject, error) => {
      failed = true;
      console.error(`${subject.id} failed:`, error);
    },
  );
  costs.push(...measured);
  const find = (id: string): CycleCost | undefined => measured.find((cost) => cost.subject === id);
  for (const [, , baselineId] of targets) {
    const [f, t, b] = [find(ours), find(twin), find(baselineId)];
    if (f !== undefined && t !== undefined && b !== undefined) accounts.push(gapAccount(f, t, b));
  }
}
const settings = ['BENCH_BACKENDS', 'BENCH_KEYS', 'BENCH_ROUNDS', 'BENCH_SLICE_MS', 'BENCH_WARMUP']
  .filter((name) => process.env[name] !== undefined)
  .map((name) => `${name}=${process.env[name] ?? ''} `)
  .join('');
console.log(gapAccountMarkdown(costs, accounts, `${settings}pnpm --filter @fencelock/bench bench:gap-account`, keys).join('\n'));
if (failed) process.exitCode = 1;
