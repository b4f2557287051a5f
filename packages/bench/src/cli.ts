/**
 * `pnpm bench`: every scenario against every subject in one run; writes bench-results/latest.json,
 * docs/BENCHMARKS.md and the charts in docs/bench/ (at the repository root). A full run (no BENCH_*
 * setting) also records its performance targets in docs/bench/history.json, which the report shows
 * beside this run's. Bounds, from the environment:
 * - BENCH_SECONDS: time per subject per measurement (uncontended, 64 keys, contention; memory gets
 *   twice that and at most 100k cycles), default 3;
 * - BENCH_ROUNDS: interleaved rounds the uncontended and 64-key time is split into, default 5 (per
 *   backend, rounded up to a balanced order; ZooKeeper and etcd get 4 × the time in 2 × the rounds,
 *   see measuring-plan.ts);
 * - BENCH_PROCESSES: processes the uncontended and 64-key measurements of each backend are split
 *   over, one after the other, each with its own warm-up, every round and 1 / BENCH_PROCESSES of the
 *   time (BENCH_CYCLES then bounds each process), default 3 (see throughput-processes.ts);
 * - BENCH_CYCLES: most uncontended cycles per subject in each process (and acquisitions per contending client), default 20000;
 * - BENCH_CLIENTS: contending processes, default 4;
 * - BENCH_HELD_LOCKS: locks held with auto-extension, default 10000; BENCH_HELD_TTL_MS: their TTL,
 *   default 3000; BENCH_HOLD_SECONDS: the measuring window, default 2 × BENCH_SECONDS;
 * - BENCH_COUNT_ON=shared: count wake-ups and requests on the shared servers instead of dedicated ones;
 * - BENCH_ONLY: comma-separated subject-id substrings, to run a subset (the per-client section's ids
 *   are `redis-clients/<library>/fencelock|raw`);
 * - BENCH_REDIS_CLIENTS: comma-separated library ids of the per-client section (ioredis5, ioredis6,
 *   iovalkey, node-redis5, node-redis6, glide), `0` to skip it (it alone: `pnpm bench:redis-clients`);
 * - BENCH_COORDINATION=0 skips the semaphores-and-elections section (it alone: `pnpm bench:coordination`);
 * - BENCH_STRESS=0 skips the stress section; BENCH_HOGS: CPU hog processes of its loaded runs,
 *   default 3; BENCH_HERD_WAITERS: the herd's concurrent acquires, default 1000;
 *   BENCH_CONTENTION_ROUNDS: runs of each implementation per load in its contention part, default 3;
 * - BENCH_PLACEMENT=apart: the single-client sections run with the client on the first half of the
 *   bench's CPUs and the servers `infra` started on the rest (default `shared`: every CPU shared, see
 *   cpu-placement.ts);
 * - BENCH_ALLOCATION_CYCLES: cycles of each pass of the allocation scenario (4b), default 20000 (each
 *   pass also bounded by 4 × BENCH_SECONDS; its CPU pass split into BENCH_ROUNDS interleaved rounds).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ALLOCATION_BACKENDS, runAllocationGroup, type AllocationResult } from './allocation.js';
import { redisUrlsOf, sharedAddresses, sharedServers, startDedicatedServers, type BenchServers } from './bench-servers.js';
import { buildCharts } from './charts.js';
import { CONTENTION_WARMUP_MS, runContention, type ContentionResult } from './contention.js';
import { benchPlacement } from './cpu-placement.js';
import { runHeldLocks, type HeldLocksResult } from './held-locks.js';
import { runMemory, type MemoryResult } from './memory.js';
import { measuringPlan, type MeasuringPlan } from './measuring-plan.js';
import type { ParallelKeysResult } from './parallel-keys.js';
import { performanceTargets } from './performance-targets.js';
import { checkTargets, computeRatios, machineInfo, renderMarkdown, type BenchResults } from './report.js';
import { isFullRun, readHistory, recordedRun, sourceCommit, withRun, writeHistory } from './run-history.js';
import { redisServerMicros } from './server-counters.js';
import { runStress, type StressResults } from './stress.js';
import { runCoordination } from './coordination.js';
import { redisClientsMarkdown, runRedisClients } from './redis-clients.js';
import { coordinationGroups } from './subjects-coordination.js';
import { redisClientPairs } from './subjects-redis-clients.js';
import { SCRIPT_COMMANDS, subjects, type Backend, type Subject } from './subjects.js';
import { idFilter, listSetting, positiveSetting } from './cli-env.js';
import { runSectionInProcesses } from './throughput-processes.js';
import type { UncontendedResult } from './uncontended.js';
import { runWaiters, type WaitersResult } from './waiters.js';

const seconds = positiveSetting('BENCH_SECONDS', 3);
const rounds = Math.round(positiveSetting('BENCH_ROUNDS', 5));
const processes = Math.round(positiveSetting('BENCH_PROCESSES', 3));
const maxCycles = positiveSetting('BENCH_CYCLES', 20_000);
const clients = positiveSetting('BENCH_CLIENTS', 4);
const heldLockCount = Math.round(positiveSetting('BENCH_HELD_LOCKS', 10_000));
const heldTtlMs = positiveSetting('BENCH_HELD_TTL_MS', 3_000);
const holdSeconds = positiveSetting('BENCH_HOLD_SECONDS', 2 * seconds);
const countOnShared = process.env['BENCH_COUNT_ON'] === 'shared';
const stressOn = process.env['BENCH_STRESS'] !== '0';
const hogCount = Math.round(positiveSetting('BENCH_HOGS', 3));
const herdWaiters = Math.round(positiveSetting('BENCH_HERD_WAITERS', 1_000));
const contentionRounds = Math.round(positiveSetting('BENCH_CONTENTION_ROUNDS', 3));
const allocationCycles = Math.round(positiveSetting('BENCH_ALLOCATION_CYCLES', 20_000));
const only = idFilter('BENCH_ONLY');
const pick = (list: readonly Subject[]): Subject[] => list.filter((subject) => only.matches(subject.id));
// Subjects that differ only under contention run in the contention scenarios alone.
const everything = pick(subjects());
const chosen = everything.filter((subject) => subject.contentionOnly !== true);
const backends = [...new Set(chosen.map((subject) => subject.backend))];

const startedAt = new Date().toISOString();
const benchStarted = performance.now();
const errors: Record<string, string> = {};
const describe = (cause: unknown): string => (cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause));
const fail = (scenario: string, subject: Subject, cause: unknown): void => {
  errors[`${scenario} ${subject.id}`] = describe(cause);
  console.log(`${scenario} ${subject.id}: FAILED ${describe(cause)}`);
};
// An exception thrown from a client library's callback (an adapter bug) would otherwise end the run
// and lose every figure measured so far: record it with the scenario that was running and go on (the
// scenario's own bounded waits end it).
let running = 'start-up';
process.on('uncaughtException', (error) => {
  errors[`uncaught exception during ${running}`] = describe(error);
  console.log(`uncaught exception during ${running}: ${describe(error)}`);
});
const elapsed = (): string => `[${((performance.now() - benchStarted) / 1000).toFixed(0)} s]`;

// With BENCH_PLACEMENT=apart the single-client sections (1, 3a, 1c, 1d, later 4b) run with the client
// and the servers on CPUs of their own (see cpu-placement.ts); by default every CPU is shared.
const placement = benchPlacement();
console.log(`${elapsed()} ${placement.description}`);

// 1 and 3a: the subjects of each backend interleaved in rounds.
const uncontended: UncontendedResult[] = [];
const parallelKeys: ParallelKeysResult[] = [];
const planOf = (backend: Backend): MeasuringPlan => measuringPlan(backend, chosen.filter((subject) => subject.backend === backend).length, seconds * 1000, rounds);
for (const backend of backends) {
  const group = chosen.filter((subject) => subject.backend === backend);
  running = `uncontended ${backend}`;
  const request = { section: 'uncontended', subjects: group.map((s) => s.id), options: { maxCycles, ...planOf(backend) } } as const;
  for (const result of await runSectionInProcesses(request, group, processes, (s, e) => fail('uncontended', s, e))) {
    uncontended.push(result);
    console.log(`${elapsed()} uncontended ${result.subject}: ${result.opsPerSec} ops/s (rounds ${result.roundOpsPerSec.join(' ')}), p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms (${result.cycles} cycles)`);
  }
}
for (const backend of backends) {
  const group = chosen.filter((subject) => subject.backend === backend);
  running = `64 keys ${backend}`;
  const request = { section: 'parallel-keys', subjects: group.map((s) => s.id), options: { keys: 64, maxCyclesPerKey: maxCycles, ...planOf(backend) } } as const;
  for (const result of await runSectionInProcesses(request, group, processes, (s, e) => fail('64 keys', s, e))) {
    parallelKeys.push(result);
    console.log(`${elapsed()} 64 keys ${result.subject}: ${result.opsPerSec} ops/s aggregate (rounds ${result.roundOpsPerSec.join(' ')}), p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms`);
  }
}

// 1c: per Redis client library, fencelock beside the raw loop on the same client, interleaved.
const clientLibraries = listSetting('BENCH_REDIS_CLIENTS');
const clientPairs = clientLibraries.includes('0')
  ? []
  : redisClientPairs(sharedAddresses().redisUrl, clientLibraries).filter((pair) => only.matches(pair.fencelock.id, pair.raw.id));
running = 'per Redis client';
const redisClients = await runRedisClients(clientPairs, { maxCycles, maxMs: seconds * 1000, rounds }, (s, e) => fail('per client', s, e), (line) => console.log(`${elapsed()} per client ${line}`));

// 1d: semaphores and elections beside the peers, uncontended and contended, interleaved.
running = 'coordination';
const coordination =
  process.env['BENCH_COORDINATION'] === '0'
    ? []
    : await runCoordination(
        coordinationGroups(sharedAddresses()).map((group) => ({ ...group, subjects: pick(group.subjects) })).filter((group) => group.subjects.length > 0),
        { maxCycles, maxMs: seconds * 1000, rounds },
        (s, e) => fail('coordination', s, e),
        (line) => console.log(`${elapsed()} ${line}`),
      );
for (const group of coordination) {
  for (const s of group.subjects) {
    if ((s.contended?.mostHolders ?? 0) > group.limit) errors[`coordination ${s.subject}`] = `SAFETY: ${s.contended?.mostHolders} holders at once, limit ${group.limit}`;
  }
}

placement.restore();

// 2: forked client processes.
const contention: ContentionResult[] = [];
for (const subject of everything.filter((s) => s.waits && s.inProcess !== true)) {
  running = `contention ${subject.id}`;
  try {
    const result = await runContention(subject, { clients, maxMs: seconds * 1000, maxAcquisitionsPerClient: maxCycles, warmupMs: CONTENTION_WARMUP_MS });
    contention.push(result);
    console.log(
      `${elapsed()} contention ${subject.id}: ${result.acquisitionsPerSec} acq/s, hand-off p50 ${result.handoffP50Ms} ms p99 ${result.handoffP99Ms} ms, ` +
        `other client ${(result.differentClientShare * 100).toFixed(0)} %, waiter next ${(result.waiterWinShare * 100).toFixed(0)} %, max wait ${result.maxWaitMs} ms, per client ${result.perClient.join('/')}, failed waits ${result.failures}`,
    );
  } catch (cause) {
    fail('contention', subject, cause);
  }
}

// 3b and 3c: counted on the servers, so on servers nobody else uses (unless told otherwise).
const waiters: WaitersResult[] = [];
const heldLocks: HeldLocksResult[] = [];
let servers: BenchServers | undefined;
try {
  servers = countOnShared ? sharedServers() : await startDedicatedServers();
  console.log(`${elapsed()} counting on ${servers.dedicated ? 'dedicated' : 'shared'} servers`);
  const counted = pick(subjects(servers.addresses)).filter((subject) => subject.contentionOnly !== true);
  for (const subject of counted.filter((s) => s.waits)) {
    running = `100 waiters ${subject.id}`;
    try {
      const result = await runWaiters(subject, { waiters: 100, waitMs: 10_000 }, servers.probe(subject.backend));
      waiters.push(result);
      console.log(`${elapsed()} 100 waiters ${subject.id}: ${result.heapPerWaiterBytes} B heap per waiter, ${result.wakeupsPerRelease ?? '—'} wake-ups per release, drain ${result.drainPerSec} grants/s, ${result.granted} granted`);
    } catch (cause) {
      fail('100 waiters', subject, cause);
    }
  }
  for (const subject of counted.filter((s) => s.openProvider !== undefined)) {
    running = `held locks ${subject.id}`;
    try {
      const result = await runHeldLocks(subject, servers.probe(subject.backend), { locks: heldLockCount, ttlMs: heldTtlMs, windowMs: holdSeconds * 1000 });
      heldLocks.push(result);
      console.log(
        `${elapsed()} ${result.locksRequested} held locks ${subject.id}: ${result.locksHeld} held, ${result.locksLost} lost, CPU ${result.cpuSecondsPerSecond.toFixed(3)} s/s, ` +
          `${result.serverRequestsPerSec} server requests/s (${result.requestsPerLockPerRenewal} per lock per renewal)`,
      );
    } catch (cause) {
      fail('held locks', subject, cause);
    }
  }
} catch (cause) {
  errors['dedicated servers'] = describe(cause);
  console.log(`dedicated servers: FAILED ${describe(cause)}`);
} finally {
  await servers?.stop();
}

// 4: heap growth.
const memory: MemoryResult[] = [];
for (const subject of chosen.filter((s) => s.kind === 'fencelock')) {
  running = `memory ${subject.id}`;
  try {
    const result = await runMemory(subject, { maxCycles: 100_000, maxMs: seconds * 2_000 });
    memory.push(result);
    console.log(`${elapsed()} memory ${subject.id}: ${result.cycles} cycles, heap ${(result.heapBeforeBytes / 2 ** 20).toFixed(1)} → ${(result.heapAfterBytes / 2 ** 20).toFixed(1)} MiB, ${result.growthPerCycleBytes} B/cycle`);
  } catch (cause) {
    fail('memory', subject, cause);
  }
}

// 4b: bytes allocated and client CPU per cycle, and who allocated them (issue "Performance"); CPU in
// interleaved rounds of each backend's subjects.
const allocation: AllocationResult[] = [];
const placedAgain = benchPlacement();
for (const backend of backends.filter((b) => ALLOCATION_BACKENDS.includes(b))) {
  running = `allocation ${backend}`;
  const group = chosen.filter((subject) => subject.backend === backend);
  // Redis reports the time it spent per command: the server's share of a cycle (all masters' for Redlock).
  const serverMicros = (subject: Subject): (() => Promise<number>) | undefined => {
    const urls = redisUrlsOf(subject.backend);
    return urls === undefined ? undefined : redisServerMicros(urls, subject.redisCommands ?? SCRIPT_COMMANDS);
  };
  for (const result of await runAllocationGroup(group, { cycles: allocationCycles, maxMs: seconds * 4_000, rounds, serverMicros }, (s, e) => fail('allocation', s, e))) {
    allocation.push(result);
    const shares = result.split.owners.map((share) => `${share.name} ${share.bytesPerCycle.toFixed(0)}`).join(', ');
    console.log(
      `${elapsed()} allocation ${result.subject}: ${result.cpuMicrosPerCycle} µs CPU/cycle (rounds ${result.roundCpuMicrosPerCycle.join(' ')}), ` +
        (result.serverMicrosPerCycle === undefined ? '' : `${result.serverMicrosPerCycle} µs server/cycle, `) +
        (result.wallMicrosPerCycle === undefined ? '' : `${result.wallMicrosPerCycle} µs wall/cycle, `) +
        `${result.bytesPerCycle} B/cycle (split pass ${result.split.bytesPerCycle}: ${shares})`,
    );
  }
}

placedAgain.restore();

// 5: stress (issue "Under load"): a herd, held locks and contention, quiet and under CPU hogs.
let stress: StressResults | undefined;
if (stressOn) {
  stress = await runStress({
    hogs: hogCount,
    herdWaiters,
    heldLocks: heldLockCount,
    heldTtlMs,
    holdWindowMs: holdSeconds * 1000,
    contentionClients: clients,
    contentionMs: seconds * 1000,
    contentionWarmupMs: CONTENTION_WARMUP_MS,
    contentionRounds,
    maxAcquisitionsPerClient: maxCycles,
    countOnShared,
    pick,
    log: (line) => console.log(`${elapsed()} stress ${line}`),
    starting: (what) => {
      running = `stress ${what}`;
    },
    fail: (what, cause) => {
      errors[`stress ${what}`] = describe(cause);
      console.log(`stress ${what}: FAILED ${describe(cause)}`);
    },
  });
}

const packageDir = new URL('../', import.meta.url);
const docsDir = new URL('../../docs/', packageDir);
const charts = buildCharts({ uncontended, parallelKeys, contention });
await mkdir(new URL('bench/', docsDir), { recursive: true });
for (const chart of charts) await writeFile(new URL(`bench/${chart.file}`, docsDir), chart.svg);

// The full runs before this one: the performance targets are shown against them.
const historyPath = new URL('bench/history.json', docsDir);
const history = await readHistory(historyPath);
const commit = sourceCommit(new URL('../../', packageDir));
const thisRunTargets = performanceTargets({ uncontended, parallelKeys, allocation, waiters });

const results: BenchResults = {
  startedAt,
  commit,
  machine: placement.placed ? { ...machineInfo(), placement: placement.description } : machineInfo(),
  settings: {
    secondsPerMeasurement: seconds,
    rounds,
    maxCycles,
    contendingProcesses: clients,
    holdMs: 1,
    ttlMs: 10_000,
    heldLocks: heldLockCount,
    heldTtlMs,
    holdWindowSeconds: holdSeconds,
  },
  measuringPlans: backends.map((backend) => ({ backend, secondsPerSubject: planOf(backend).maxMs / 1000, rounds: planOf(backend).rounds, processes })),
  uncontended,
  parallelKeys,
  ...(redisClients.length === 0 ? {} : { redisClients }),
  ...(coordination.length === 0 ? {} : { coordination }),
  contention,
  waiters,
  heldLocks,
  memory,
  allocation,
  ...(stress === undefined ? {} : { stress }),
  countedOn: countOnShared ? 'shared servers' : 'dedicated servers',
  built: process.env['FENCELOCK_BENCH_BUILT'] === '1',
  charts: charts.map((chart) => ({ path: `bench/${chart.file}`, title: chart.title })),
  ratios: computeRatios(uncontended, contention, parallelKeys, allocation),
  targets: checkTargets(uncontended, contention, waiters, heldLocks, stress, allocation),
  performanceTargets: thisRunTargets,
  earlierRuns: history.filter((run) => run.startedAt !== startedAt),
  errors,
  fenceGrowth: await readFile(new URL('bench/fence-growth.md', docsDir), 'utf8').catch(() => undefined),
};
await mkdir(new URL('bench-results/', packageDir), { recursive: true });
const jsonPath = new URL('bench-results/latest.json', packageDir);
const docsPath = new URL('BENCHMARKS.md', docsDir);
await writeFile(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
await writeFile(docsPath, renderMarkdown(results));
if (isFullRun()) await writeHistory(historyPath, withRun(history, recordedRun(startedAt, commit, results.machine, thisRunTargets)));
console.log(`\n${elapsed()} wrote ${fileURLToPath(jsonPath)}, ${fileURLToPath(docsPath)} and ${charts.length} charts in ${fileURLToPath(new URL('bench/', docsDir))}`);
for (const ratio of results.ratios) {
  const range = ratio.roundRange === undefined ? '' : ` (rounds ${ratio.roundRange.min}–${ratio.roundRange.max})`;
  console.log(`${ratio.backend.padEnd(9)} ${ratio.scenario.padEnd(31)} ${ratio.ours} / ${ratio.baseline}: ${ratio.ratio}${range}`);
}
for (const target of [...results.targets, ...thisRunTargets]) console.log(`${target.met ? 'met    ' : 'MISSED '} ${target.target}: ${target.measured}`);
console.log(isFullRun() ? `recorded this run in ${fileURLToPath(historyPath)}` : `not a full run (BENCH_* settings, or not built): not recorded in ${fileURLToPath(historyPath)}`);
