/**
 * The targets of the issue "Performance: cheaper per lock than every peer", checked against one run:
 * throughput ratios (the median of the per-round ratios of interleaved rounds, as in the ratio table),
 * fencelock's own bytes per cycle, and heap per waiting acquire. Each target has a stable id, so that
 * runs recorded in `docs/bench/history.json` (see `run-history.ts`) can be set side by side: the issue
 * asks for every target to hold in two full runs.
 */
import type { AllocationResult } from './allocation.js';
import { type ThroughputResult, unroundedPairedRatio } from './rounds.js';
import { round } from './stats.js';
import { machineLabel, type RecordedRun } from './run-history.js';
import { perProcessRatios } from './throughput-processes.js';
import type { MachineInfo } from './report.js';
import type { WaitersResult } from './waiters.js';

/** Bytes fencelock itself may allocate per acquire + release cycle on the memory provider. */
export const MEMORY_OWN_BYTES_TARGET = 3_000;
/** Bytes fencelock itself may allocate per cycle on Redis, ioredis' share apart. */
export const REDIS_OWN_BYTES_TARGET = 5_000;

/** One target, checked against one run. */
export interface PerformanceTarget {
  /** Stable across runs: how the history matches a target of one run to the same target of another. */
  readonly id: string;
  readonly target: string;
  /** The measured value (a ratio, or bytes), NaN when a side was not measured. */
  readonly measured: number;
  readonly met: boolean;
  /** A throughput target's split into protocol and library (see {@link ThroughputSplit}); absent for the others. */
  readonly split?: ThroughputSplit;
  /**
   * A throughput target measured in several processes: each process's own ratio (the median of its
   * rounds' ratios, two places), in the order they ran. Absent when measured in one.
   */
  readonly perProcess?: readonly number[];
}

/**
 * Where a throughput ratio comes from, from the backend's protocol twin (a raw client loop that
 * sends exactly fencelock's requests, with no library around them), paired by round as the ratio is:
 * `protocol` = twin ÷ the baseline, what fencelock's requests reach with no library code at all, and
 * `library` = fencelock ÷ twin, what the library's own code keeps of it. No library sending these
 * requests can do better than the twin, so a target whose least ratio is above `protocol` cannot hold
 * without sending something else.
 */
export interface ThroughputSplit {
  readonly least: number;
  readonly protocol: number;
  readonly library: number;
}

type Throughput = Pick<ThroughputResult, 'subject' | 'opsPerSec' | 'roundOpsPerSec' | 'processes'>;

/** What the targets are checked against: a run's results (older results may lack a section). */
export interface PerformanceInputs {
  readonly uncontended: readonly Throughput[];
  readonly parallelKeys: readonly Throughput[];
  readonly allocation?: readonly Pick<AllocationResult, 'subject' | 'ownBytesPerCycle'>[];
  readonly waiters: readonly Pick<WaitersResult, 'subject' | 'heapPerWaiterBytes'>[];
}

/** [backend, fencelock subject, baseline subject, baseline's name, least ratio uncontended, at 64 keys] */
export type ThroughputTarget = readonly [string, string, string, string, number, number];

/** The throughput targets. */
export const THROUGHPUT_TARGETS: readonly ThroughputTarget[] = [
  ['redis', 'redis/fencelock', 'redis/node-redlock', 'node-redlock', 1, 1],
  ['redis', 'redis/fencelock', 'redis/redis-semaphore-mutex', 'redis-semaphore Mutex', 1, 1],
  ['redis', 'redis/fencelock', 'redis/raw-ioredis', 'raw ioredis', 0.85, 0.8],
  ['redlock', 'redlock/fencelock', 'redlock/node-redlock', 'node-redlock (5 masters)', 1, 1],
  ['redlock', 'redlock/fencelock', 'redlock/redis-semaphore-redlock-mutex', 'redis-semaphore RedlockMutex (5 masters)', 1, 1],
  ['zookeeper', 'zookeeper/fencelock', 'zookeeper/raw-recipe', 'the raw ZooKeeper recipe', 1, 1],
  ['etcd', 'etcd/fencelock', 'etcd/raw-txn', 'the raw etcd transaction pair', 1, 1],
];

const BACKEND_NAMES: Readonly<Record<string, string>> = { redis: 'Redis', redlock: 'Redlock-5', zookeeper: 'ZooKeeper', etcd: 'etcd' };

/** Each backend's protocol twin (see `subjects-protocol*.ts`). */
export const PROTOCOL_TWINS: Readonly<Record<string, string>> = {
  redis: 'redis/protocol-twin',
  redlock: 'redlock/protocol-twin',
  zookeeper: 'zookeeper/protocol-twin',
  etcd: 'etcd/protocol-twin',
};

/** Every target of the issue, checked against `inputs`. */
export function performanceTargets(inputs: PerformanceInputs): PerformanceTarget[] {
  const targets: PerformanceTarget[] = [];
  const scenarios = [
    ['uncontended', 'uncontended', inputs.uncontended],
    ['64 keys', 'parallel-keys', inputs.parallelKeys],
  ] as const;
  for (const [scenario, idPrefix, rows] of scenarios) {
    for (const [backend, oursId, theirsId, theirName, leastUncontended, leastParallel] of THROUGHPUT_TARGETS) {
      const atLeast = scenario === 'uncontended' ? leastUncontended : leastParallel;
      const measuredRatio = (a: string, b: string): number => {
        const top = rows.find((r) => r.subject === a);
        const bottom = rows.find((r) => r.subject === b);
        return top === undefined || bottom === undefined || !(bottom.opsPerSec > 0) ? Number.NaN : unroundedPairedRatio(top, bottom);
      };
      const twin = PROTOCOL_TWINS[backend] ?? '';
      const split = { least: atLeast, protocol: roundRatio(measuredRatio(twin, theirsId)), library: roundRatio(measuredRatio(oursId, twin)) };
      const checked = check(`${idPrefix}:${oursId}:${theirsId}`, `${BACKEND_NAMES[backend]} ${scenario} ≥ ${atLeast.toFixed(2)} × ${theirName}`, measuredRatio(oursId, theirsId), (v) => v >= atLeast);
      const ours = rows.find((r) => r.subject === oursId);
      const theirs = rows.find((r) => r.subject === theirsId);
      const perProcess = ours === undefined || theirs === undefined ? [] : perProcessRatios(ours, theirs).map(roundRatio);
      targets.push({
        ...checked,
        ...(Number.isFinite(split.protocol) && Number.isFinite(split.library) ? { split } : {}),
        ...(perProcess.length > 1 ? { perProcess } : {}),
      });
    }
  }
  const allocation = inputs.allocation ?? [];
  const ownBytes = (id: string): number => allocation.find((r) => r.subject === id)?.ownBytesPerCycle ?? Number.NaN;
  targets.push(
    check('own-bytes:memory', `memory provider: fencelock's own bytes per cycle ≤ ${MEMORY_OWN_BYTES_TARGET.toLocaleString('en-US')} B`, ownBytes('memory/fencelock'), (v) => v <= MEMORY_OWN_BYTES_TARGET),
    check('own-bytes:redis', `Redis: fencelock's own bytes per cycle ≤ ${REDIS_OWN_BYTES_TARGET.toLocaleString('en-US')} B (ioredis' share apart)`, ownBytes('redis/fencelock'), (v) => v <= REDIS_OWN_BYTES_TARGET),
  );
  const heap = (id: string): number => inputs.waiters.find((r) => r.subject === id)?.heapPerWaiterBytes ?? Number.NaN;
  targets.push(
    check(
      'heap-per-waiter:redis',
      "Redis: heap per waiting acquire ≤ redis-semaphore Mutex's (measured: ours / theirs)",
      heap('redis/fencelock') / heap('redis/redis-semaphore-mutex'),
      (v) => v <= 1,
    ),
  );
  return targets;
}

function roundRatio(value: number): number {
  return Number.isFinite(value) ? round(value, 2) : Number.NaN;
}

// A ratio with two places, or the more places its check kept (see `check`).
const ratioFigure = (value: number): string => value.toFixed(Math.max(2, (String(value).split('.')[1] ?? '').length));

// The most decimals shown to keep a figure's rounding from contradicting its verdict.
const MAX_DECIMALS = 6;

// The verdict is the measured value's; the figure is rounded (none for bytes, two places for ratios),
// with as many more places as it takes not to round across the threshold: 0.995 × a 1.00 target is
// shown as 0.995 and missed, not as 1.00.
function check(id: string, target: string, value: number, ok: (value: number) => boolean): PerformanceTarget {
  if (!Number.isFinite(value)) return { id, target, measured: Number.NaN, met: false };
  const met = ok(value);
  let decimals = value >= 100 ? 0 : 2;
  while (decimals < MAX_DECIMALS && ok(round(value, decimals)) !== met) decimals += 1;
  return { id, target, measured: round(value, decimals), met };
}

/** Earlier runs shown beside this one. */
export const EARLIER_RUNS_SHOWN = 3;

/**
 * The section of docs/BENCHMARKS.md: every target in this run beside the full runs recorded before it
 * on the same machine (newest first), and whether it held in this run and the one before.
 */
export function performanceTargetsMarkdown(
  targets: readonly PerformanceTarget[],
  thisRun: { startedAt: string; commit?: string; machine: Pick<MachineInfo, 'cpu' | 'cores' | 'placement'> },
  earlier: readonly RecordedRun[],
): string[] {
  const machine = machineLabel(thisRun.machine);
  const shown = earlier
    .filter((run) => run.machine === machine)
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt))
    .slice(0, EARLIER_RUNS_SHOWN);
  const previous = shown[0];
  const when = (run: { startedAt: string; commit?: string }): string => `${run.startedAt.slice(0, 16).replace('T', ' ')} UTC, ${run.commit ?? 'commit unknown'}`;
  const cell = (target: Pick<PerformanceTarget, 'measured' | 'met' | 'perProcess'> | undefined): string => {
    if (target === undefined) return '—';
    const value = Number.isFinite(target.measured) ? String(target.measured) : 'not measured';
    const processes = target.perProcess === undefined ? '' : ` (per process ${target.perProcess.map((r) => r.toFixed(2)).join(' / ')})`;
    return `${value}${target.met ? ' met' : ' **missed**'}${processes}`;
  };
  const row = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [
    '## Targets of the performance issue: this run and the full runs before it',
    '',
    'The issue "Performance: cheaper per lock than every peer" asks each of its targets to hold in two full',
    `runs. Here they are in this run beside the last full \`pnpm bench\` runs on this machine (${machine}) recorded`,
    'in `docs/bench/history.json` (newest first; every full run adds itself, a subset run adds nothing; runs of',
    'other machines, or with the client and servers placed on CPUs otherwise, stay in the file and are not shown here). Ratios are ours ÷ theirs, the median of',
    'the per-round ratios of sections 1 (uncontended) and 3a (64 keys), over every process they were measured in (each',
    "process's own ratio follows in brackets, in the order they ran); bytes are section 4b's own bytes per",
    "cycle; heap per waiter is section 3b's. A commit marked `+ changes` ran with uncommitted code.",
    '',
    row(['target', `this run (${when(thisRun)})`, ...shown.map((run) => `earlier (${when(run)})`), 'held in this run and the one before']),
    `|---|---:|${shown.map(() => '---:|').join('')}---|`,
    ...targets.map((target) => {
      const before = previous?.targets.find((t) => t.id === target.id);
      const both = before === undefined ? '—' : target.met && before.met ? 'yes' : '**no**';
      return row([target.target, cell(target), ...shown.map((run) => cell(run.targets.find((t) => t.id === target.id))), both]);
    }),
    '',
    ...throughputSplitMarkdown(
      targets,
      shown.find((run) => run.targets.some((target) => target.split !== undefined)),
    ),
  ];
}

/**
 * What keeps each throughput target where it is, in this run and the one before (when it recorded the
 * split): the protocol twin's ratio to the same baseline (fencelock's requests with no library) and
 * fencelock's ratio to its twin (the library). A target whose least ratio is above the twin's is out of
 * reach of any library sending these requests.
 */
export function throughputSplitMarkdown(targets: readonly PerformanceTarget[], previous: RecordedRun | undefined): string[] {
  const split = targets.filter((target) => target.split !== undefined);
  if (split.length === 0) return [];
  const earlier = (id: string) => previous?.targets.find((target) => target.id === id)?.split;
  const pair = (value: ThroughputSplit | undefined, pick: (split: ThroughputSplit) => number): string =>
    value === undefined ? '—' : pick(value).toFixed(2);
  const verdict = (target: PerformanceTarget): string => {
    const { least, protocol } = target.split as ThroughputSplit;
    if (target.met) return 'met';
    if (protocol < least) return `the requests: alone they reach ${protocol.toFixed(2)}, below ${least.toFixed(2)}`;
    return `the library: the requests alone reach ${protocol.toFixed(2)}`;
  };
  const row = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [
    '### Protocol or library: what keeps each throughput target where it is',
    '',
    "Each backend's protocol twin is a raw client loop that sends exactly fencelock's requests with no library",
    'around them (see "Protocol or library" in 4b). "Requests alone" = twin ÷ the baseline: the most any library',
    `sending these requests could reach. "Library" = fencelock ÷ twin: what fencelock's own code keeps of it.`,
    'Both are medians of the per-round ratios of the same rounds as the target; they multiply to about the',
    "target's ratio, not exactly (a median of products is not the product of medians). Where a target misses",
    'and its requests alone are below its least ratio, no library change can make it hold: only sending',
    'something else could. The run before is the last full run on this machine that recorded the split.',
    '',
    row(['target', 'this run', 'requests alone', 'library', 'run before: requests alone', 'run before: library', 'what keeps it there (this run)']),
    '|---|---:|---:|---:|---:|---:|---|',
    ...split.map((target) =>
      row([
        target.target,
        ratioFigure(target.measured),
        pair(target.split, (s) => s.protocol),
        pair(target.split, (s) => s.library),
        pair(earlier(target.id), (s) => s.protocol),
        pair(earlier(target.id), (s) => s.library),
        verdict(target),
      ]),
    ),
    '',
  ];
}
