/**
 * The results document: JSON shape, ratios (ours / raw, ours / each peer, same run) and the
 * markdown of docs/BENCHMARKS.md.
 */
import { cpus, totalmem, platform, release } from 'node:os';
import type { AllocationResult } from './allocation.js';
import { CONTENTION_WARMUP_MS, type ContentionResult } from './contention.js';
import { ROUND_TRIP_DEFINITIONS, type HeldLocksResult } from './held-locks.js';
import type { MemoryResult } from './memory.js';
import type { HerdResult } from './herd.js';
import type { ParallelKeysResult } from './parallel-keys.js';
import { coordinationMarkdown, type CoordinationResult } from './coordination.js';
import { performanceTargetsMarkdown, type PerformanceTarget } from './performance-targets.js';
import { protocolSplitMarkdown } from './protocol-split.js';
import { redisClientsMarkdown, type RedisClientResult } from './redis-clients.js';
import { pairedRatio, type RoundRange } from './rounds.js';
import type { RecordedRun } from './run-history.js';
import { round } from './stats.js';
import { ratioToBestPeer } from './contention-rounds.js';
import type { Load, StressContentionResult, StressResults } from './stress.js';
import { UNCONTENDED_WARMUP_CYCLES, UNCONTENDED_WARMUP_MS, type UncontendedResult } from './uncontended.js';
import { WAKEUP_DEFINITIONS, type WaitersResult } from './waiters.js';

/** The machine the figures come from. */
export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  /**
   * Where the client and the servers ran during the single-client sections (see `cpu-placement.ts`),
   * when they had CPUs of their own; absent when they shared every CPU.
   */
  readonly placement?: string;
}

/** One ratio of fencelock against a baseline on the same backend, same run. */
export interface Ratio {
  readonly backend: string;
  readonly scenario: 'uncontended ops/s' | '64 keys ops/s' | 'contention acq/s' | 'hand-off p50 (lower is better)' | 'client CPU per cycle (lower is better)';
  readonly ours: string;
  readonly baseline: string;
  readonly baselineKind: 'raw' | 'peer';
  /** ours / baseline: the median of the per-round ratios when both ran in interleaved rounds. */
  readonly ratio: number;
  /** Smallest and largest per-round ratio, and how many rounds were paired (absent without rounds). */
  readonly roundRange?: RoundRange;
}

/** One of issue 7's ratio targets, checked against this run. */
export interface TargetCheck {
  readonly target: string;
  /** The measured value (a ratio or a share), NaN when a side is missing. */
  readonly measured: number;
  readonly met: boolean;
  /** `stress` for the targets of the stress section (issue "Under load"), shown in that section. */
  readonly section?: 'stress';
}

/** Everything one `pnpm bench` run produced (bench-results/latest.json). */
export interface BenchResults {
  readonly startedAt: string;
  readonly machine: MachineInfo;
  readonly settings: Record<string, number>;
  /**
   * Time per subject and rounds of each backend in 1 and 3a (see `measuring-plan.ts`; absent in older
   * results), and the processes they were split over (see `throughput-processes.ts`; absent: one).
   */
  readonly measuringPlans?: readonly { readonly backend: string; readonly secondsPerSubject: number; readonly rounds: number; readonly processes?: number }[];
  readonly uncontended: readonly UncontendedResult[];
  readonly parallelKeys: readonly ParallelKeysResult[];
  readonly contention: readonly ContentionResult[];
  readonly waiters: readonly WaitersResult[];
  /** Per Redis client library, fencelock beside the raw loop on the same client (absent when skipped). */
  readonly redisClients?: readonly RedisClientResult[];
  /** Semaphores and elections beside the peers (absent when skipped and in older results). */
  readonly coordination?: readonly CoordinationResult[];
  /** 10,000 held locks with auto-extension (absent in older results). */
  readonly heldLocks?: readonly HeldLocksResult[];
  readonly memory: readonly MemoryResult[];
  /** Allocation and client CPU per cycle (absent in older results). */
  readonly allocation?: readonly AllocationResult[];
  /** The stress section (absent when skipped with `BENCH_STRESS=0`, and in older results). */
  readonly stress?: StressResults;
  /** Where the server-counted scenarios (waiters, held locks) ran. */
  readonly countedOn?: 'dedicated servers' | 'shared servers';
  /** Whether fencelock was loaded from its built packages (`pnpm bench`) rather than its sources. */
  readonly built?: boolean;
  /** Chart files written next to docs/BENCHMARKS.md, relative to docs/ (e.g. `bench/handoff-latency.svg`), with titles. */
  readonly charts?: readonly { readonly path: string; readonly title: string }[];
  readonly ratios: readonly Ratio[];
  readonly targets: readonly TargetCheck[];
  /** The commit measured (see `sourceCommit`; absent in older results). */
  readonly commit?: string;
  /** The performance issue's targets in this run (absent in older results). */
  readonly performanceTargets?: readonly PerformanceTarget[];
  /** The full runs recorded before this one, oldest first (`docs/bench/history.json`). */
  readonly earlierRuns?: readonly RecordedRun[];
  /** Measurements that failed outright, by subject id. */
  readonly errors: Readonly<Record<string, string>>;
  /**
   * The "Fence counters" section as `pnpm bench:fence-growth` last wrote it (docs/bench/fence-growth.md):
   * a separate, slower command, whose figures each full run carries over.
   */
  readonly fenceGrowth?: string;
}

/** This machine. */
export function machineInfo(): MachineInfo {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    os: `${platform()} ${release()}`,
    node: process.version,
  };
}

/** fencelock against every raw client and peer measured on the same backend. */
export function computeRatios(
  uncontended: readonly UncontendedResult[],
  contention: readonly ContentionResult[],
  parallelKeys: readonly ParallelKeysResult[] = [],
  allocation: readonly AllocationResult[] = [],
): Ratio[] {
  const ratios: Ratio[] = [];
  const throughput = [
    ['uncontended ops/s', uncontended],
    ['64 keys ops/s', parallelKeys],
  ] as const;
  for (const [scenario, rows] of throughput) {
    for (const ours of rows.filter((r) => r.kind === 'fencelock')) {
      for (const other of rows.filter((r) => r.backend === ours.backend && r.kind !== 'fencelock')) {
        if (other.opsPerSec > 0) {
          ratios.push({ backend: ours.backend, scenario, ours: ours.label, baseline: other.label, baselineKind: other.kind as 'raw' | 'peer', ...pairedRatio(ours, other) });
        }
      }
    }
  }
  for (const ours of contention.filter((r) => r.kind === 'fencelock')) {
    for (const other of contention.filter((r) => r.backend === ours.backend && r.kind !== 'fencelock')) {
      const kind = other.kind as 'raw' | 'peer';
      if (other.acquisitionsPerSec > 0) {
        ratios.push({ backend: ours.backend, scenario: 'contention acq/s', ours: ours.label, baseline: other.label, baselineKind: kind, ratio: round(ours.acquisitionsPerSec / other.acquisitionsPerSec, 2) });
      }
      if (Number.isFinite(ours.handoffP50Ms) && Number.isFinite(other.handoffP50Ms) && other.handoffP50Ms > 0) {
        ratios.push({ backend: ours.backend, scenario: 'hand-off p50 (lower is better)', ours: ours.label, baseline: other.label, baselineKind: kind, ratio: round(ours.handoffP50Ms / other.handoffP50Ms, 3) });
      }
    }
  }
  for (const ours of allocation.filter((r) => r.kind === 'fencelock')) {
    for (const other of allocation.filter((r) => r.backend === ours.backend && r.kind !== 'fencelock')) {
      if (other.cpuMicrosPerCycle > 0) {
        const kind = other.kind as 'raw' | 'peer';
        ratios.push({ backend: ours.backend, scenario: 'client CPU per cycle (lower is better)', ours: ours.label, baseline: other.label, baselineKind: kind, ...pairedRatio(cpuRounds(ours), cpuRounds(other)) });
      }
    }
  }
  return ratios;
}

// CPU per cycle in the shape pairedRatio reads (rounds of the same interleaved measurement pair up).
const cpuRounds = (r: AllocationResult): { opsPerSec: number; roundOpsPerSec: readonly number[] } => ({ opsPerSec: r.cpuMicrosPerCycle, roundOpsPerSec: r.roundCpuMicrosPerCycle });

/**
 * The client-CPU comparisons of the allocation scenario (4b), beside issue 7's targets: theirs / ours,
 * above 1 when fencelock spends less CPU per cycle. The performance issue's own targets (throughput,
 * bytes, heap per waiter) are `performanceTargets`, in their own section.
 */
export function allocationTargets(allocation: readonly AllocationResult[]): [string, number, (value: number) => boolean][] {
  const result = (id: string): AllocationResult | undefined => allocation.find((r) => r.subject === id);
  // Theirs / ours (the median of the per-round ratios).
  const cpuAgainst = (id: string): number => {
    const [theirs, ours] = [result(id), result('redis/fencelock')];
    return theirs === undefined || ours === undefined || !(ours.cpuMicrosPerCycle > 0) ? Number.NaN : pairedRatio(cpuRounds(theirs), cpuRounds(ours)).ratio;
  };
  return [
    ['Redis client CPU per cycle: ≥ 1.0 × node-redlock (measured: theirs / ours)', cpuAgainst('redis/node-redlock'), (v) => v >= 1],
    ['Redis client CPU per cycle: ≥ 1.0 × redis-semaphore Mutex (measured: theirs / ours)', cpuAgainst('redis/redis-semaphore-mutex'), (v) => v >= 1],
    ['Redis client CPU per cycle: ≥ 0.85 × raw ioredis (measured: theirs / ours)', cpuAgainst('redis/raw-ioredis'), (v) => v >= 0.85],
  ];
}

/**
 * Wake-ups per release allowed above one (100 grants: at most 5 extra wake-ups). Waiters in one
 * process queue in core's local line, so only the head of the line is ever woken by the server
 * (often less than once per release: the next head finds the lock already free).
 */
export const ONE_WAKEUP_TOLERANCE = 0.05;

/** Server requests per held lock per renewal interval below which renewals count as batched. */
export const BATCHED_REQUESTS_PER_LOCK = 0.1;

// Renewals that lose locks are not a success however few requests they take: no figure then.
const batchedRenewals = (result: HeldLocksResult | undefined): number =>
  result === undefined || result.locksLost > 0 || result.locksHeld === 0 ? Number.NaN : result.requestsPerLockPerRenewal;

const toChecks = (checks: readonly (readonly [string, number, (value: number) => boolean])[], section?: 'stress'): TargetCheck[] =>
  checks.map(([target, measured, ok]) => ({ target, measured: round(measured, 4), met: Number.isFinite(measured) && ok(measured), ...(section === undefined ? {} : { section }) }));

/** The targets of issue 7, and those of the stress section when it ran, checked against this run's results. */
export function checkTargets(
  uncontended: readonly UncontendedResult[],
  contention: readonly ContentionResult[],
  waiters: readonly WaitersResult[] = [],
  heldLocks: readonly HeldLocksResult[] = [],
  stress?: StressResults,
  allocation: readonly AllocationResult[] = [],
): TargetCheck[] {
  // The same paired ratio as the ratio table (median of per-round ratios when the rounds pair up).
  const ratioOf = (oursId: string, otherId: string): number => {
    const ours = uncontended.find((r) => r.subject === oursId);
    const other = uncontended.find((r) => r.subject === otherId);
    return ours === undefined || other === undefined || !(other.opsPerSec > 0) ? Number.NaN : pairedRatio(ours, other).ratio;
  };
  const fight = (id: string): ContentionResult | undefined => contention.find((r) => r.subject === id);
  const wakeups = (id: string): number => waiters.find((r) => r.subject === id)?.wakeupsPerRelease ?? Number.NaN;
  const held = (id: string): number => batchedRenewals(heldLocks.find((r) => r.subject === id));
  const oneWakeup = (v: number): boolean => v <= 1 + ONE_WAKEUP_TOLERANCE;
  const lockCount = (heldLocks[0]?.locksRequested ?? 10_000).toLocaleString('en-US');
  const checks: [string, number, (value: number) => boolean][] = [
    ['Redis uncontended ≥ 0.95 × raw ioredis', ratioOf('redis/fencelock', 'redis/raw-ioredis'), (v) => v >= 0.95],
    [
      'Redis hand-off p50 ≤ 1/3 of redis-semaphore Mutex (measured: ours / theirs)',
      (fight('redis/fencelock')?.handoffP50Ms ?? Number.NaN) / (fight('redis/redis-semaphore-mutex')?.handoffP50Ms ?? Number.NaN),
      (v) => v <= 1 / 3,
    ],
    ['Redis: ≥ 90 % of releases with a waiter go to a waiting client', fight('redis/fencelock')?.waiterWinShare ?? Number.NaN, (v) => v >= 0.9],
    ['Redlock (5 masters) uncontended ≥ 1.1 × node-redlock', ratioOf('redlock/fencelock', 'redlock/node-redlock'), (v) => v >= 1.1],
    [
      'Redlock under contention: every client makes progress (min per-client acquisitions)',
      Math.min(...(fight('redlock/fencelock')?.perClient ?? [Number.NaN])),
      (v) => v > 0,
    ],
    ['ZooKeeper uncontended ≥ 0.9 × the raw recipe', ratioOf('zookeeper/fencelock', 'zookeeper/raw-recipe'), (v) => v >= 0.9],
    ['etcd uncontended ≥ 1.5 × etcd3 client.lock()', ratioOf('etcd/fencelock', 'etcd/etcd3-lock'), (v) => v >= 1.5],
    [`ZooKeeper: at most one wake-up per release with 100 waiters (≤ 1 + ${ONE_WAKEUP_TOLERANCE}, server-counted)`, wakeups('zookeeper/fencelock'), oneWakeup],
    [`etcd: at most one wake-up per release with 100 waiters (≤ 1 + ${ONE_WAKEUP_TOLERANCE}, server-counted)`, wakeups('etcd/fencelock'), oneWakeup],
    [
      `Redis: renewals of ${lockCount} held locks batched (< ${BATCHED_REQUESTS_PER_LOCK} server requests per lock per renewal interval, no lock lost)`,
      held('redis/fencelock'),
      (v) => v < BATCHED_REQUESTS_PER_LOCK,
    ],
    [
      `Redlock: renewals of ${lockCount} held locks batched (< ${BATCHED_REQUESTS_PER_LOCK} server requests per lock per renewal interval over all masters, no lock lost)`,
      held('redlock/fencelock'),
      (v) => v < BATCHED_REQUESTS_PER_LOCK,
    ],
    ...(allocation.length === 0 ? [] : allocationTargets(allocation)),
  ];
  return [...toChecks(checks), ...(stress === undefined ? [] : stressTargets(stress))];
}

/** The backends the stress targets are checked on (the memory provider is measured, not targeted). */
const STRESS_TARGET_BACKENDS = ['redis', 'redlock', 'etcd', 'zookeeper'] as const;

const BACKEND_NAMES: Readonly<Record<string, string>> = { redis: 'Redis', redlock: 'Redlock', etcd: 'etcd', zookeeper: 'ZooKeeper', memory: 'memory' };

/** Share of releases with a waiter that must go to a waiting client, under contention. */
export const WAITER_SHARE_TARGET = 0.9;

const LOADS: readonly Load[] = ['quiet', 'loaded'];

/** The targets of the issue "Under load", checked against the stress section's results. */
export function stressTargets(stress: StressResults): TargetCheck[] {
  const checks: [string, number, (value: number) => boolean][] = [];
  const waiters = stress.settings['herdWaiters'] ?? Number.NaN;
  for (const backend of STRESS_TARGET_BACKENDS) {
    const name = BACKEND_NAMES[backend] ?? backend;
    const herd = stress.herd.find((r) => r.backend === backend && r.kind === 'fencelock');
    const timeoutMs = herd?.requestTimeout.ms ?? Number.NaN;
    checks.push(
      [`${name} herd of ${waiters} waiters: every call settled (measured: unsettled calls)`, herd?.unsettled ?? Number.NaN, (v) => v === 0],
      [
        // Without a timed-out call there is no lateness to bound: 0 then.
        `${name} herd: settle overrun p99 ≤ one request timeout, ${fmt(timeoutMs, 0)} ms (${herd?.requestTimeout.source ?? 'not measured'}) (measured: p99 ms)`,
        herd === undefined ? Number.NaN : herd.timedOut === 0 ? 0 : herd.overrunP99Ms,
        (v) => v <= timeoutMs,
      ],
    );
  }
  for (const backend of STRESS_TARGET_BACKENDS) {
    for (const load of LOADS) {
      const result = stress.heldLocks.find((r) => r.backend === backend && r.kind === 'fencelock' && r.load === load);
      checks.push([
        `${BACKEND_NAMES[backend] ?? backend}: 0 of ${(result?.locksRequested ?? stress.settings['heldLocks'] ?? Number.NaN).toLocaleString('en-US')} held locks lost, ${load} (measured: locks lost or not held at the end)`,
        result === undefined ? Number.NaN : Math.max(result.locksLost, result.locksRequested - result.locksHeldAtEnd),
        (v) => v === 0,
      ]);
    }
  }
  for (const backend of ['redis', 'redlock'] as const) {
    for (const load of LOADS) {
      const result = stress.heldLocks.find((r) => r.backend === backend && r.kind === 'fencelock' && r.load === load);
      checks.push([
        `${BACKEND_NAMES[backend] ?? backend}: < ${BATCHED_REQUESTS_PER_LOCK} server requests per held lock per renewal, ${load} (no lock lost)`,
        batchedRenewals(result),
        (v) => v < BATCHED_REQUESTS_PER_LOCK,
      ]);
    }
  }
  for (const backend of ['redis', 'redlock'] as const) {
    const name = BACKEND_NAMES[backend] ?? backend;
    for (const load of LOADS) {
      const rows = stress.contention.filter((r) => r.backend === backend && r.load === load);
      // The default hand-off (waiters first) and the documented alternative (barging), each checked.
      const ours = rows.find((r) => r.subject === `${backend}/fencelock`);
      const barging = rows.find((r) => r.subject === `${backend}/fencelock-barging`);
      const peers = rows.filter((r) => r.kind === 'peer');
      const best = peers.length === 0 ? Number.NaN : Math.max(...peers.map((r) => r.acquisitionsPerSec));
      // With rounds, the median of the per-round ratios (each round's best peer); else the one run's ratio.
      const againstBest = (r: StressContentionResult | undefined): number => {
        if (r !== undefined && stress.contentionRounds !== undefined) return ratioToBestPeer(stress.contentionRounds, r.subject, load).median;
        return best > 0 ? (r?.acquisitionsPerSec ?? Number.NaN) / best : Number.NaN;
      };
      const measured = stress.contentionRounds === undefined ? 'ours / the better one' : 'ours / the better one, median of the rounds';
      checks.push(
        [`${name} contention, ${load}: acq/s ≥ the better of node-redlock and redis-semaphore (measured: ${measured})`, againstBest(ours), (v) => v >= 1],
        [`${name} contention, ${load}: ≥ ${WAITER_SHARE_TARGET * 100} % of releases with a waiter go to a waiting client`, ours?.waiterWinShare ?? Number.NaN, (v) => v >= WAITER_SHARE_TARGET],
        [`${name} contention, ${load}, handoff 'barging': acq/s ≥ the better peer (measured: ${measured})`, againstBest(barging), (v) => v >= 1],
      );
    }
  }
  return toChecks(checks, 'stress');
}

/** The seed article's figures per backend: latency range (ms) and throughput range (ops/s). */
const SEED_ARTICLE: Readonly<Record<string, { latency: string; throughput: string }>> = {
  redis: { latency: '1–5 ms', throughput: '10k+ ops/s' },
  zookeeper: { latency: '5–20 ms', throughput: '1–5k ops/s' },
  etcd: { latency: '5–15 ms', throughput: '2–8k ops/s' },
};

const fmt = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

const pct = (share: number): string => `${fmt(share * 100, 0)} %`;

// Time per subject and rounds by backend (1 and 3a): ZooKeeper and etcd get more of both (measuring-plan.ts),
// and the processes they were split over (throughput-processes.ts).
function measuringPlansLines(results: BenchResults): string[] {
  const plans = results.measuringPlans ?? [];
  if (plans.length === 0) return [];
  const processes = plans[0]?.processes ?? 1;
  const each = plans
    .map((plan) => `${BACKEND_NAMES[plan.backend] ?? plan.backend} ${fmt(plan.secondsPerSubject, 0)} s in ${(plan.processes ?? 1) > 1 ? `${plan.processes} × ` : ''}${plan.rounds}`)
    .join(', ');
  return [
    `Measuring time per subject and rounds, here and in 3a (orders balanced over the rounds; ZooKeeper and etcd, whose cycles are quorum writes of milliseconds, get more of both, see \`src/measuring-plan.ts\`): ${each}.`,
    ...(processes > 1
      ? [
          `Each backend was measured in ${processes} processes one after the other (\`BENCH_PROCESSES\`), each with its own warm-up, every round and a`,
          `${processes === 3 ? 'third' : `1/${processes}`} of the time: what V8 compiled in one process moves a ratio by several per cent for that process's whole life, which`,
          "its rounds cannot average out (see `src/throughput-processes.ts`). A ratio is the median of every process's per-round ratios.",
        ]
      : []),
  ];
}

const ratioRange = (r: Ratio): string => (r.roundRange === undefined ? '—' : `${fmt(r.roundRange.min, 2)}–${fmt(r.roundRange.max, 2)} (${r.roundRange.rounds})`);

const tally = (counts: Readonly<Record<string, number>>): string =>
  Object.entries(counts).length === 0 ? '0' : Object.entries(counts).map(([name, count]) => `${count} ${name}`).join(', ');

const targetRows = (targets: readonly TargetCheck[]): string[] =>
  targets.map((t) => `| ${t.target} | ${Number.isInteger(t.measured) ? t.measured : fmt(t.measured, Math.abs(t.measured) < 0.1 ? 4 : 2)} | ${t.met ? 'yes' : '**no**'} |`);

const leastServed = (r: ContentionResult): number => (r.perClient.length === 0 ? Number.NaN : Math.min(...r.perClient));

/** The "Stress" section of docs/BENCHMARKS.md. */
function stressMarkdown(stress: StressResults, targets: readonly TargetCheck[]): string[] {
  const s = stress.settings;
  const contentionRoundCount = s['contentionRounds'] ?? 1;
  const herdWaiters = s['herdWaiters'] ?? Number.NaN;
  const heldCount = (s['heldLocks'] ?? Number.NaN).toLocaleString('en-US');
  const lines = [
    '## Stress: a herd of waiters, held locks and contention, quiet and under CPU load',
    '',
    `Produced by \`${stress.command}\` (from the repository root, after \`pnpm infra:up\`), after the scenarios`,
    'above; `BENCH_STRESS=0` skips it. "Loaded" runs happen while',
    `${s['hogs'] ?? '—'} CPU hog process${s['hogs'] === 1 ? '' : 'es'} (\`src/cpu-hogs.ts\`, \`BENCH_HOGS\`) spin a core each; they start before`,
    'each loaded measurement and are stopped after it (by the PIDs the bench started), and each one also',
    'ends by itself at a deadline and when its parent goes away.',
    '',
    '| target | measured | met |',
    '|---|---:|---|',
    ...targetRows(targets),
    '',
    `### Herd: ${herdWaiters.toLocaleString('en-US')} waiters on one key (\`src/herd.ts\`, \`BENCH_HERD_WAITERS\`)`,
    '',
    'One provider holds a key; a second provider in the same process starts every',
    `\`acquire(key, { waitMs: ${s['herdWaitMs'] ?? '—'} })\` at once; the holder releases ${s['herdReleaseAfterMs'] ?? '—'} ms later and every waiter`,
    'that gets the lock releases it at once (so several grants fit in the window). Settle overrun = settle time −',
    '`waitMs` of the calls that timed out, from each call\'s own start. Every call must settle (within `waitMs`',
    '+ 30 s; a call still pending then counts as unsettled, a failure). Server requests are counted on',
    'dedicated servers from the first acquire to 500 ms after the last call settled, as in 3c below; per grant',
    '= requests / grants. The request timeout is the provider\'s default per-request timeout, the bound of the',
    'overrun target.',
    '',
    '| backend | implementation | settled | unsettled | granted | timed out | other failures | overrun p50 ms | overrun p99 ms | overrun max ms | release → first grant ms | server requests | per grant | request timeout ms |',
    '|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...stress.herd.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.settled} / ${r.waiters} | ${r.unsettled} | ${r.granted} | ${r.timedOut} | ${tally(r.otherFailures)} | ${fmt(r.overrunP50Ms, 1)} | ${fmt(r.overrunP99Ms, 1)} | ${fmt(r.overrunMaxMs, 1)} | ${fmt(r.releaseToFirstGrantMs ?? Number.NaN, 1)} | ${r.serverRequests} | ${fmt(r.serverRequestsPerGrant ?? Number.NaN, 2)} | ${r.requestTimeout.ms ?? '—'} |`,
    ),
    '',
    'Request timeouts used: ' + stress.herd.map((r) => `${r.backend} ${r.requestTimeout.ms ?? '—'} ms (${r.requestTimeout.source})`).join('; ') + '.',
    '',
    `### ${heldCount} held locks, quiet and loaded (\`src/held-locks.ts\`, as in 3c)`,
    '',
    '| backend | implementation | load | locks held | lost | held at end | server requests/s | per lock per renewal | CPU s/s |',
    '|---|---|---|---:|---|---:|---:|---:|---:|',
    ...stress.heldLocks.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.load} | ${r.locksHeld} / ${r.locksRequested} | ${r.locksLost === 0 ? '0' : `${r.locksLost} (${tally(r.lostReasons)})`} | ${r.locksHeldAtEnd} | ${fmt(r.serverRequestsPerSec, 1)} | ${fmt(r.requestsPerLockPerRenewal, 4)} | ${fmt(r.cpuSecondsPerSecond, 3)} |`,
    ),
    '',
    `### Contention, quiet and loaded (\`src/contention.ts\`, as in 2): ${s['contendingProcesses'] ?? '—'} processes, ${fmt((s['contentionMs'] ?? Number.NaN) / 1000, 0)} s each, measured after ${fmt((s['contentionWarmupMs'] ?? 0) / 1000, 1)} s of contending`,
    '',
    'Every implementation quiet, then every one loaded, so the figures a target compares ran side by side;',
    `under each load, ${contentionRoundCount} round${contentionRoundCount === 1 ? '' : 's'}, each in its own order (A B C, B C A, …). A row is the round with the median acq/s, whole;`,
    '"acq/s per round" lists every round. "Waiter next" as in 2; "least served" = the acquisitions of the client that got the fewest; "client CPU" = the',
    'CPU time of the client processes in their loops per acquisition (where the processes and the server have fewer cores than they need, what each hand-off costs the others).',
    '',
    '| backend | implementation | kind | load | acq/s | acq/s per round | hand-off p50 ms | hand-off p99 ms | waiter next | least served | per client | failed waits | client CPU µs/acq |',
    '|---|---|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|',
    ...stress.contention.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.kind} | ${r.load} | ${fmt(r.acquisitionsPerSec, 1)} | ${(r.roundsAcquisitionsPerSec ?? [r.acquisitionsPerSec]).map((v) => fmt(v, 0)).join(' / ')} | ${fmt(r.handoffP50Ms, 2)} | ${fmt(r.handoffP99Ms, 2)} | ${pct(r.waiterWinShare)} | ${fmt(leastServed(r), 0)} | ${r.perClient.join(' / ')} | ${r.failures} | ${fmt(r.clientCpuPerAcquisitionUs, 0)} |`,
    ),
    '',
    ...contentionRatioMarkdown(stress),
    ...fifoFloorMarkdown(stress.contention),
    '### The CPU hogs of each loaded run',
    '',
    '| run | hogs | CPU s per hog | ended |',
    '|---|---:|---|---|',
    ...stress.hogRuns.map(
      (run) => `| ${run.run} | ${run.hogs.length} | ${run.hogs.map((hog) => fmt(hog.cpuMs / 1000, 1)).join(' / ')} | ${[...new Set(run.hogs.map((hog) => hog.ended))].join(', ')} |`,
    ),
    '',
  ];
  return lines;
}

/**
 * Per load and backend, each fencelock subject, floor and twin against the better peer of the same
 * round: the median of the per-round ratios with their range, the figure the contention targets judge.
 */
export function contentionRatioMarkdown(stress: StressResults): string[] {
  const rounds = stress.contentionRounds;
  if (rounds === undefined || rounds.length === 0) return [];
  const rows = stress.contention.filter((r) => r.kind !== 'peer');
  const lines = rows
    .map((r) => ({ r, ratio: ratioToBestPeer(rounds, r.subject, r.load) }))
    .filter(({ ratio }) => ratio.rounds > 0)
    .map(({ r, ratio }) => `| ${r.backend} | ${r.label} | ${r.load} | ${fmt(ratio.median, 2)} | ${fmt(ratio.min, 2)}–${fmt(ratio.max, 2)} (${ratio.rounds}) |`);
  if (lines.length === 0) return [];
  return [
    'Against the better peer (node-redlock or redis-semaphore) of the same round: the median of the per-round ratios of acq/s.',
    '',
    '| backend | implementation | load | ÷ better peer | per-round range |',
    '|---|---|---|---:|---|',
    ...lines,
    '',
  ];
}

/**
 * What the FIFO floor (a token in a Redis list, BLPOP and LPUSH: a hand-off to the longest-waiting
 * process and nothing else) says about the contention target, per load: the most a lock that serves
 * waiters first could do on this machine, against the better peer (which mostly lets the releasing
 * process take the lock straight back) and against @fencelock/redis.
 */
export function fifoFloorMarkdown(contention: readonly StressContentionResult[]): string[] {
  const sentences: string[] = [];
  for (const load of LOADS) {
    const rows = contention.filter((r) => r.backend === 'redis' && r.load === load);
    const floor = rows.find((r) => r.subject === 'redis/fifo-floor');
    const fair = rows.find((r) => r.subject === 'redis/fair-floor');
    const ours = rows.find((r) => r.subject === 'redis/fencelock');
    const peers = rows.filter((r) => r.kind === 'peer');
    if (floor === undefined || ours === undefined || peers.length === 0) continue;
    const best = peers.reduce((a, b) => (b.acquisitionsPerSec > a.acquisitionsPerSec ? b : a));
    const twin = rows.find((r) => r.subject === 'redis/handoff-twin');
    const fairSentence =
      fair === undefined
        ? ''
        : ` The fair-lock floor made ${fmt(fair.acquisitionsPerSec, 0)} acq/s with ${pct(fair.waiterWinShare)} to waiters, ` +
          `${fmt(fair.acquisitionsPerSec / best.acquisitionsPerSec, 2)} × the better peer; @fencelock/redis made ${fmt(ours.acquisitionsPerSec / fair.acquisitionsPerSec, 2)} × it.`;
    const twinSentence =
      twin === undefined
        ? ''
        : ` Its requests without its code (the hand-off twin) made ${fmt(twin.acquisitionsPerSec, 0)} acq/s, ${fmt(twin.acquisitionsPerSec / best.acquisitionsPerSec, 2)} × the better peer, ` +
          `with ${fmt(twin.clientCpuPerAcquisitionUs, 0)} µs of client CPU per acquisition against fencelock's ${fmt(ours.clientCpuPerAcquisitionUs, 0)}.`;
    sentences.push(
      `${load === 'quiet' ? 'Quiet' : 'Loaded'}: the FIFO floor made ${fmt(floor.acquisitionsPerSec, 0)} acq/s with ${pct(floor.waiterWinShare)} to waiters, ` +
        `${fmt(floor.acquisitionsPerSec / best.acquisitionsPerSec, 2)} × ${best.label} (${fmt(best.acquisitionsPerSec, 0)} acq/s, ${pct(best.waiterWinShare)} to waiters); ` +
        `@fencelock/redis made ${fmt(ours.acquisitionsPerSec / floor.acquisitionsPerSec, 2)} × the floor.${fairSentence}${twinSentence}`,
    );
  }
  if (sentences.length === 0) return [];
  return [
    'The FIFO floor is not a lock: one token in a Redis list, taken with `BLPOP` (Redis serves the longest-blocked',
    'client first) and given back with `LPUSH`, with no TTL, owner check or fencing token. It is the bare hand-off',
    'between processes that any lock pays when every release goes to a client already waiting, so it bounds what',
    'such a lock can do here; the peers go faster where the releasing process takes the lock straight back.',
    'The fair-lock floor is the least a lock that serves waiters first does, as raw ioredis: a TTL, an owner check and',
    'a fencing token, a release that grants the lock to the head of a Redis list of waiters, each waiter blocked in',
    '`BLPOP` on its own grant list (no lapsing registrations, no holder record, no time floor for tokens; see',
    '`src/subjects-fair-floor.ts`). Between it and @fencelock/redis is what fencelock\'s protocol and code add; the',
    'hand-off twin (raw ioredis sending @fencelock/redis\'s contended requests: the registering acquire with its',
    'direct-grant ask, the release that grants, the grant read from pub/sub) splits that in two.',
    'Each process here makes a few hundred acquisitions a second, so after the short warm-up much of its contended',
    'path still runs unoptimized, and a longer path costs more CPU for it than it will in a long-running service;',
    '`BENCH_CONTENTION_WARMUP_SECONDS=30 BENCH_SECONDS=5 pnpm --filter @fencelock/bench bench:contention` measures',
    'the steady state (see the bench README).',
    '',
    ...sentences.flatMap((sentence) => [sentence, '']),
  ];
}

// Largest allocating functions of fencelock listed per fencelock subject.
const OWN_FUNCTIONS_LISTED = 8;

/** Section 4b: bytes and client CPU per cycle, who allocated them, and fencelock's largest allocations. */
function allocationMarkdown(allocation: readonly AllocationResult[]): string[] {
  const bytes = (r: AllocationResult, group: string): number =>
    r.split.owners.filter((share) => share.group === group).reduce((total, share) => total + share.bytesPerCycle, 0);
  const lines = [
    '## 4b. Allocation and client CPU per acquire + release cycle',
    '',
    `One client, acquire + release of one key in a loop (as in 1), up to ${allocation[0]?.allocationCycles ?? '—'} cycles per pass (fewer where a pass reaches its time bound) after a warm-up. CPU = user + system`,
    'CPU time of the client process per cycle, the median of interleaved rounds (the subjects of a backend take',
    'turns, as in 1; the ratio table pairs the rounds). Bytes = bytes allocated on the V8 heap per cycle by the whole',
    'process, by V8\'s own accounting (heap used after − before, plus what every GC in between freed), with',
    'inlining on, as users run the code. Who allocated them comes from a sampling heap profile taken in a',
    'separate process started with `--no-turbo-inlining`, so that an inlined function\'s allocations are not',
    'charged to its caller; that pass allocates a few per cent more (less escape analysis): its total is the',
    '"split total". A sample belongs to the innermost frame in a package\'s own JavaScript: `node_modules/<package>/`',
    'is that package (ioredis, node-zookeeper-client, etcd3 and their dependencies are client libraries), `packages/<name>/` is fencelock,',
    'the bench\'s own code is the harness (the loop, the session wrappers, the raw baselines\' protocol); frames',
    'of Node itself and V8 builtins (`randomUUID`, `Map#delete`, the promise machinery) count for their caller;',
    'an allocation with no package frame on its stack (socket reads, the microtask runner) is the runtime\'s.',
    '"Own" = fencelock for fencelock, the peer\'s package for a peer, the harness for a raw baseline.',
    'Server µs/cycle (Redis; Redlock: summed over its masters) = the time the servers spent running the commands the client sent in the CPU',
    'rounds (`INFO commandstats`, read around each round: EVAL and EVALSHA, with the commands a script runs',
    'inside its time; SET too for the raw loop), per cycle, the median of the rounds. Wall µs/cycle = the wall time',
    'of the same CPU rounds (median): client CPU + server time + the two round trips\' network and scheduling.',
    '',
    '| backend | implementation | kind | CPU µs/cycle | server µs/cycle | wall µs/cycle | B/cycle | split total B/cycle | own B/cycle | client library B/cycle | harness B/cycle | runtime B/cycle |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...allocation.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.kind} | ${fmt(r.cpuMicrosPerCycle, 1)} | ${r.serverMicrosPerCycle === undefined ? '—' : fmt(r.serverMicrosPerCycle, 1)} | ${r.wallMicrosPerCycle === undefined ? '—' : fmt(r.wallMicrosPerCycle, 0)} | ${fmt(r.bytesPerCycle, 0)} | ${fmt(r.split.bytesPerCycle, 0)} | ${fmt(r.ownBytesPerCycle, 0)} | ${fmt(r.clientLibraryBytesPerCycle, 0)} | ${fmt(bytes(r, 'harness'), 0)} | ${fmt(bytes(r, 'runtime'), 0)} |`,
    ),
    '',
  ];
  for (const r of allocation.filter((result) => result.kind === 'fencelock')) {
    const own = r.split.functions.filter((share) => share.owner === 'fencelock').slice(0, OWN_FUNCTIONS_LISTED);
    if (own.length === 0) continue;
    lines.push(`Largest allocations of fencelock, ${r.label} (B/cycle, in the split pass): ${own.map((share) => `\`${share.frame}\` ${fmt(share.bytesPerCycle, 0)}`).join(', ')}.`, '');
  }
  return [...lines, ...cpuSplitMarkdown(allocation)];
}

// The profiled pass's CPU µs per cycle of the owners `keep` accepts.
function profiledMicros(r: AllocationResult, keep: (owner: string, group: string) => boolean): number {
  return (r.split.cpu?.owners ?? []).filter((share) => keep(share.owner, share.group)).reduce((total, share) => total + share.microsPerCycle, 0);
}

/** Who spent the client CPU of a cycle (the CPU profile of the split process), and fencelock's costliest functions. */
function cpuSplitMarkdown(allocation: readonly AllocationResult[]): string[] {
  const profiled = allocation.filter((r) => r.split.cpu !== undefined);
  if (profiled.length === 0) return [];
  const lines = [
    'Client CPU by owner: a V8 CPU profile (a tick every 200 µs) of one more pass in the split process, each',
    'tick charged by the rule above and scaled to that pass\'s CPU time (the profiler\'s ticks and inlining off',
    'included, so well above the CPU column: read the shares). Runtime = V8 itself (`(program)`, the garbage collector) and Node code',
    'with no package frame above it (socket reads, timers, the microtask runner).',
    '',
    '| backend | implementation | kind | profiled CPU µs/cycle | own µs | client library µs | harness µs | runtime µs |',
    '|---|---|---|---:|---:|---:|---:|---:|',
    ...profiled.map((r) => {
      const own = profiledMicros(r, (owner) => owner === r.ownOwner);
      const library = profiledMicros(r, (owner, group) => group === 'library' && owner !== r.ownOwner);
      const harness = r.kind === 'raw' ? 0 : profiledMicros(r, (_owner, group) => group === 'harness');
      const runtime = profiledMicros(r, (_owner, group) => group === 'runtime');
      return `| ${r.backend} | ${r.label} | ${r.kind} | ${fmt(r.split.cpu?.microsPerCycle ?? Number.NaN, 1)} | ${fmt(own, 1)} | ${fmt(library, 1)} | ${fmt(harness, 1)} | ${fmt(runtime, 1)} |`;
    }),
    '',
  ];
  for (const r of profiled.filter((result) => result.kind === 'fencelock')) {
    const top = (r.split.cpu?.functions ?? []).filter((share) => share.group === 'fencelock').slice(0, OWN_FUNCTIONS_LISTED);
    if (top.length === 0) continue;
    lines.push(`Costliest functions of fencelock, ${r.label} (client CPU µs/cycle, self time): ${top.map((share) => `\`${share.frame ?? '?'}\` ${fmt(share.microsPerCycle, 2)}`).join(', ')}.`, '');
  }
  return lines;
}

/**
 * Where the wall time of a fencelock cycle goes beside each baseline's on the same backend, from this
 * run's figures: the wall time, server time and client CPU of the same rounds of 4b (1 / ops/s of
 * section 1 for results that have no wall time of their own), and the CPU split.
 */
function cycleGapMarkdown(uncontended: readonly UncontendedResult[], allocation: readonly AllocationResult[]): string[] {
  const wall = (subject: string): number => {
    const own = allocation.find((r) => r.subject === subject)?.wallMicrosPerCycle;
    if (own !== undefined) return own;
    const ops = uncontended.find((r) => r.subject === subject)?.opsPerSec;
    return ops === undefined || ops <= 0 ? Number.NaN : 1e6 / ops;
  };
  const scale = (r: AllocationResult): number => (r.split.cpu === undefined || r.split.cpu.microsPerCycle <= 0 ? Number.NaN : r.cpuMicrosPerCycle / r.split.cpu.microsPerCycle);
  // The profiled pass runs slower (profiler ticks, inlining off): its shares are scaled to the CPU column.
  const part = (r: AllocationResult, keep: (owner: string, group: string) => boolean): number => profiledMicros(r, keep) * scale(r);
  // Own code: fencelock's, a peer's package, or (a raw loop) the protocol the bench writes for it.
  const own = (r: AllocationResult): number => part(r, (owner, group) => (r.kind === 'fencelock' ? group === 'fencelock' : owner === r.ownOwner));
  const harness = (r: AllocationResult): number => (r.kind === 'raw' ? 0 : part(r, (_owner, group) => group === 'harness'));
  const library = (r: AllocationResult): number => part(r, (owner, group) => group === 'library' && owner !== r.ownOwner);
  const runtime = (r: AllocationResult): number => part(r, (_owner, group) => group === 'runtime');
  const signed = (value: number): string => (Number.isNaN(value) ? '—' : `${value >= 0 ? '+' : '−'}${fmt(Math.abs(value), 0)}`);
  const rows: string[] = [];
  for (const ours of allocation.filter((r) => r.kind === 'fencelock' && !Number.isNaN(wall(r.subject)))) {
    for (const base of allocation.filter((r) => r.backend === ours.backend && r.kind !== 'fencelock' && !Number.isNaN(wall(r.subject)))) {
      const gap = wall(ours.subject) - wall(base.subject);
      const server = ours.serverMicrosPerCycle === undefined || base.serverMicrosPerCycle === undefined ? Number.NaN : ours.serverMicrosPerCycle - base.serverMicrosPerCycle;
      const cpu = ours.cpuMicrosPerCycle - base.cpuMicrosPerCycle;
      const cells = [
        ours.backend, ours.label, base.label, base.kind, fmt(wall(ours.subject), 0), fmt(wall(base.subject), 0), signed(gap), signed(server), signed(cpu),
        signed(own(ours) - own(base)), signed(harness(ours) - harness(base)), signed(library(ours) - library(base)), signed(runtime(ours) - runtime(base)),
        signed(gap - (Number.isNaN(server) ? 0 : server) - cpu),
      ];
      rows.push(`| ${cells.join(' | ')} |`);
    }
  }
  if (rows.length === 0) return [];
  return [
    '### Where each cycle\'s gap to a baseline goes',
    '',
    'µs per cycle, this run. Wall, server and client CPU come from the same cycles: the CPU rounds of the table above',
    '(medians of the rounds; section 1\'s ops/s, measured in other cycles, give a noisier view of the same gap). Server = the server µs of',
    'the table above (Redis and Redlock; a dash elsewhere, where the server\'s time is in "rest"). Client CPU = the',
    'CPU column above, split by the CPU profile (scaled to that column) into own code (fencelock\'s against the',
    "baseline's: the peer's package, or for a raw loop the protocol the bench sends for it), the bench's session",
    'wrapper (harness), the client library and the runtime. Rest = gap − server − client CPU: the network and the',
    'scheduling of the round trips (a process that idles longer wakes slower), and the server where it is not counted.',
    '',
    '| backend | fencelock | baseline | kind | wall | baseline wall | gap | server | client CPU | own code | harness | client library | runtime | rest |',
    '|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    "On Redis the extra server time is what the raw loop does not do: the fencing token read and written per acquire, the holder record `inspect` reads, and the line of waiters both scripts look at.",
    '',
  ];
}

/** docs/BENCHMARKS.md for `results`. */
export function renderMarkdown(results: BenchResults): string {
  const m = results.machine;
  const heldLocks = results.heldLocks ?? [];
  const charts = results.charts ?? [];
  const chart = (file: string): string[] => {
    const found = charts.find((c) => c.path.endsWith(`/${file}`));
    return found === undefined ? [] : [`![${found.title}](${found.path})`, ''];
  };
  const lines: string[] = [
    '# Benchmarks',
    '',
    '<!-- Generated by `pnpm bench` (packages/bench/src/cli.ts). Do not edit by hand: re-run the bench. -->',
    '',
    `Measured ${results.startedAt}${results.commit === undefined ? '' : ` at commit ${results.commit}`} on ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node},`,
    'against real servers on loopback (one Redis; five Redlock masters; a 3-node ZooKeeper ensemble; a',
    '3-member etcd cluster), all in ONE run so the ratios compare like with like. The machine is shared and',
    'small: read the ratios, not the absolute figures. Latency and throughput run on the shared test-infra',
    `servers; the server-counted scenarios (wake-ups, held locks) on ${results.countedOn ?? 'the shared servers'} of the same kind,`,
    'so that other clients do not show up in the counters.',
    '',
    m.placement === undefined
      ? 'Client and servers shared every CPU in every section.'
      : `CPUs in the single-client sections (1, 3a, 1c, 1d and 4b): ${m.placement} (\`taskset\`, see \`src/cpu-placement.ts\`), as on separate hosts; the other sections run on shared CPUs.`,
    '',
    results.built
      ? 'fencelock is loaded from its built packages (`dist/`, as users install it), like the baselines.'
      : 'fencelock is loaded from its TypeScript sources (through tsx), which costs it some client CPU: `pnpm bench` measures the built packages.',
    '',
    `Settings: ${Object.entries(results.settings).map(([k, v]) => `${k} = ${v}`).join(', ')}.`,
    '',
    '## Ratios (headline)',
    '',
    'ours / baseline, same backend, same run. Above 1 is better for throughput; below 1 is better for hand-off',
    'latency. Throughput ratios come from interleaved rounds (ours and every baseline of the backend take',
    'turns in short slices, each round in a balanced order): the ratio is the median of the per-round ratios, and the range',
    'column shows the smallest and largest per-round ratio (number of rounds), a direct view of the noise.',
    '',
    '| backend | scenario | fencelock | baseline | kind | ratio | per-round range |',
    '|---|---|---|---|---|---:|---|',
    ...results.ratios.map((r) => `| ${r.backend} | ${r.scenario} | ${r.ours} | ${r.baseline} | ${r.baselineKind} | ${fmt(r.ratio, r.ratio < 0.1 ? 3 : 2)} | ${ratioRange(r)} |`),
    '',
    '## Targets (issue 7) in this run',
    '',
    '| target | measured | met |',
    '|---|---:|---|',
    ...targetRows(results.targets.filter((t) => t.section !== 'stress')),
    '',
    ...(results.performanceTargets === undefined ? [] : performanceTargetsMarkdown(results.performanceTargets, results, results.earlierRuns ?? [])),
    '## The seed article side by side with ours',
    '',
    'Ours: p50 of an uncontended acquire + release cycle (one client, one key), and the aggregate throughput',
    'of the 64-key run (one client, 64 keys in parallel). The article gives ranges without a setup; ours are',
    'on this 2-core machine with every server on loopback.',
    '',
    '| backend | article latency | ours p50 ms | article throughput | ours 64-key ops/s |',
    '|---|---|---:|---|---:|',
    ...Object.entries(SEED_ARTICLE).map(([backend, article]) => {
      const ours = results.uncontended.find((r) => r.backend === backend && r.kind === 'fencelock');
      const wide = results.parallelKeys.find((r) => r.backend === backend && r.kind === 'fencelock');
      return `| ${backend} | ${article.latency} | ${fmt(ours?.p50Ms ?? Number.NaN, 2)} | ${article.throughput} | ${fmt(wide?.opsPerSec ?? Number.NaN, 0)} |`;
    }),
    '',
    '## 1. Uncontended: one client, acquire + release of one key in a loop',
    '',
    `ops/s is the median over the rounds (best round next to it); latency percentiles pool every round. Each subject first runs ${UNCONTENDED_WARMUP_CYCLES.toLocaleString('en-US')}`,
    `unmeasured cycles (at most ${UNCONTENDED_WARMUP_MS / 1_000} s), so that the rounds measure the code V8 has optimized, as a long-running service runs it.`,
    ...measuringPlansLines(results),
    '',
    '| backend | implementation | kind | cycles | ops/s | best round | p50 ms | p90 ms | p99 ms | max ms |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...results.uncontended.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.kind} | ${r.cycles} | ${fmt(r.opsPerSec, 0)} | ${fmt(r.bestOpsPerSec ?? Number.NaN, 0)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p90Ms ?? Number.NaN, 2)} | ${fmt(r.p99Ms, 2)} | ${fmt(r.maxMs ?? Number.NaN, 1)} |`,
    ),
    '',
    ...chart('uncontended-latency.svg'),
    '## 3a. 64 keys in parallel: one client, 64 concurrent acquire + release loops on distinct keys',
    '',
    '| backend | implementation | kind | cycles | aggregate ops/s | best round | p50 ms | p90 ms | p99 ms | max ms |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...results.parallelKeys.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.kind} | ${r.cycles} | ${fmt(r.opsPerSec, 0)} | ${fmt(r.bestOpsPerSec ?? Number.NaN, 0)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p90Ms ?? Number.NaN, 2)} | ${fmt(r.p99Ms, 2)} | ${fmt(r.maxMs ?? Number.NaN, 1)} |`,
    ),
    '',
    ...chart('parallel-keys-latency.svg'),
    ...(results.redisClients === undefined || results.redisClients.length === 0 ? [] : redisClientsMarkdown(results.redisClients, 'pnpm bench')),
    ...(results.coordination === undefined || results.coordination.length === 0 ? [] : coordinationMarkdown(results.coordination, 'pnpm bench')),
    '## 2. Contention: client processes on one key',
    '',
    'Each process loops acquire → hold 1 ms → release. Hand-off = from a holder starting its release to the',
    'first grant to a client that was already waiting then (hrtime, shared by the processes; if the releaser',
    'barges back in first, the hand-off includes its next hold). "Other client" = share of consecutive',
    'acquisitions that went to a different client than the last holder; "waiter next" = of the releases',
    'with another client waiting, the share where a waiting client got the lock next. One run per',
    `implementation (not interleaved: the processes are forked per run); each run contends ${fmt(CONTENTION_WARMUP_MS / 1000, 1)} s before its measured window opens. The raw FIFO floor is not a lock but the bare`,
    'hand-off between processes that serving waiters first costs (see the stress section).',
    '',
    '| backend | implementation | kind | clients | acquisitions | acq/s | hand-off p50 ms | hand-off p90 ms | hand-off p99 ms | other client | waiter next | max wait ms | per client | failed waits |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
    ...results.contention.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.kind} | ${r.clients} | ${r.acquisitions} | ${fmt(r.acquisitionsPerSec, 1)} | ${fmt(r.handoffP50Ms, 2)} | ${fmt(r.handoffP90Ms ?? Number.NaN, 2)} | ${fmt(r.handoffP99Ms, 2)} | ${pct(r.differentClientShare)} | ${pct(r.waiterWinShare)} | ${fmt(r.maxWaitMs, 0)} | ${r.perClient.join(' / ')} | ${r.failures} |`,
    ),
    '',
    ...chart('handoff-latency.svg'),
    '## 3b. 100 waiters on one key (one process): heap per waiter, wake-ups per release, drain rate',
    '',
    'One client holds the key while 100 acquires of it wait (every one reported waiting); heap per waiter',
    'is the heap growth (full GC before and after) / 100. Then the holder releases and each waiter takes',
    'and releases the lock in turn. Wake-ups per release are counted on the SERVER over that drain and',
    'divided by the releases that had a waiter (= grants): 1 means only the next waiter is woken, N means',
    'every one of N waiters tries on every release. What counts as one wake-up, per backend:',
    '',
    ...Object.entries(WAKEUP_DEFINITIONS).map(([backend, definition]) => `- ${backend}: ${definition}.`),
    '',
    '| backend | implementation | kind | waiters | granted | heap per waiter B | wake-ups per release | drain grants/s |',
    '|---|---|---|---:|---:|---:|---:|---:|',
    ...results.waiters.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.kind} | ${r.waiters} | ${r.granted} | ${fmt(r.heapPerWaiterBytes, 0)} | ${r.wakeupsPerRelease === undefined ? '—' : fmt(r.wakeupsPerRelease, 2)} | ${fmt(r.drainPerSec, 1)} |`,
    ),
    '',
    'Peers have no wake-up figure (their protocol is not ours to decode); their raw counter deltas are in',
    'the JSON (`waiters[].counters`).',
    '',
    `## 3c. ${(heldLocks[0]?.locksRequested ?? 10_000).toLocaleString('en-US')} held locks with auto-extension: client CPU and server requests per second`,
    '',
    'One provider takes the locks on distinct keys with a short TTL, waits one renewal interval, then holds',
    'them for the window. Per-lock providers (redis, redlock) acquire with that `ttlMs` and `autoExtend` on',
    '(core renews a lock once a third of its TTL has passed); session providers (etcd, zookeeper) get a',
    'session / lease of that TTL, renewed by the session keep-alive whatever the number of locks. A lock',
    'counts as lost when the provider emits `lost` for it (reason in brackets). The acquire phase (64 at a',
    'time) is bounded (90 s): a provider that cannot take every lock in time is measured with the locks it',
    'holds, and "locks held" says how many that was. CPU = (user + system CPU',
    'time of the client process over the window) / window. Server requests per second are counted on the',
    'servers; "per lock per renewal" = requests/s × (TTL / 3) / locks held: about 1 (× masters for Redlock)',
    'when every lock is renewed by a request of its own, far below 1 when renewals are batched or shared.',
    '',
    '| backend | implementation | expiry | TTL ms | locks held | lost | acquire s | window s | CPU s/s | server requests/s | per lock per renewal | extended events/s | heap per lock B |',
    '|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...heldLocks.map(
      (r) =>
        `| ${r.backend} | ${r.label} | ${r.expiry} | ${r.ttlMs} | ${r.locksHeld} / ${r.locksRequested} | ${r.locksLost === 0 ? '0' : `${r.locksLost} (${tally(r.lostReasons)})`} | ${fmt(r.acquireSeconds, 1)} | ${fmt(r.windowSeconds, 1)} | ${fmt(r.cpuSecondsPerSecond, 3)} | ${fmt(r.serverRequestsPerSec, 1)} | ${fmt(r.requestsPerLockPerRenewal, 4)} | ${fmt(r.extendedEventsPerSec, 0)} | ${fmt(r.heapPerLockBytes, 0)} |`,
    ),
    '',
    'Server requests, per backend:',
    '',
    ...Object.entries(ROUND_TRIP_DEFINITIONS).map(([backend, definition]) => `- ${backend}: ${definition}.`),
    '',
  ];
  const failedAcquires = heldLocks.filter((r) => Object.keys(r.acquireFailures).length > 0);
  if (failedAcquires.length > 0) {
    lines.push('Acquires that failed while taking the locks: ' + failedAcquires.map((r) => `${r.subject}: ${tally(r.acquireFailures)}`).join('; ') + '.', '');
  }
  lines.push(
    '## 4. Memory: heap after acquire + release cycles against before (full GC both times)',
    '',
    '| backend | implementation | cycles | heap before MiB | heap after MiB | growth B/cycle |',
    '|---|---|---:|---:|---:|---:|',
    ...results.memory.map(
      (r) => `| ${r.backend} | ${r.label} | ${r.cycles} | ${fmt(r.heapBeforeBytes / 2 ** 20, 2)} | ${fmt(r.heapAfterBytes / 2 ** 20, 2)} | ${fmt(r.growthPerCycleBytes, 1)} |`,
    ),
    '',
  );
  if (results.allocation !== undefined && results.allocation.length > 0) {
    lines.push(
      ...allocationMarkdown(results.allocation),
      ...cycleGapMarkdown(results.uncontended, results.allocation),
      ...protocolSplitMarkdown(results.uncontended, results.parallelKeys, results.allocation),
    );
  }
  if (results.stress !== undefined) lines.push(...stressMarkdown(results.stress, results.targets.filter((t) => t.section === 'stress')));
  const errors = Object.entries(results.errors);
  if (results.fenceGrowth !== undefined) lines.push(results.fenceGrowth.trimEnd(), '');
  if (errors.length > 0) {
    lines.push('## Measurements that failed', '', ...errors.map(([id, message]) => `- \`${id}\`: ${message}`), '');
  }
  lines.push(
    '## Notes',
    '',
    '- Raw baselines: ioredis `SET key owner NX PX` + a Lua compare-and-delete; an etcd transaction',
    '  (`put` if `create_revision == 0`, then delete if the value is ours; no lease); the ZooKeeper',
    '  ephemeral-sequential recipe (create, `getChildren`, lowest wins, delete) on node-zookeeper-client.',
    '  Raw baselines and etcd3 `client.lock()` do not wait, so they only run uncontended.',
    '- node-redlock runs with an `error` listener (so failed attempts retry) and its default 200 ms retry',
    '  delay; redis-semaphore with its default 10 ms retry interval and refresh disabled; every lock has a',
    '  10 s TTL; in the latency scenarios the per-lock fencelock adapters (redis, redlock) run with',
    '  `autoExtend: false`, so no renewal traffic is measured there; the session adapters (etcd, zookeeper:',
    '  10 s session) keep their session heartbeat. Renewal costs are scenario 3c.',
    '- `@fencelock/core MemoryLockProvider` (in-process, no network) shows what core itself costs per lock.',
    '  Its baseline is async-mutex\'s `Mutex`, one per key: mutual exclusion in one process and nothing',
    '  else (no TTL, owner check, fencing token or handle), so the ratio is the price of those. Neither can',
    '  run the multi-process contention scenario.',
    '- Memory runs at most 100k cycles AND at most twice the per-measurement time, so on slow backends it',
    '  covers fewer cycles than the issue asks for (see the cycles column).',
    '- Charts are generated SVG files in `docs/bench/`; JSON with every figure and the raw counter deltas:',
    '  `packages/bench/bench-results/latest.json`.',
    '',
  );
  return lines.join('\n');
}
