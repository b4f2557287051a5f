import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { performanceTargets, performanceTargetsMarkdown, type PerformanceInputs } from '../src/performance-targets.js';
import { machineInfo, renderMarkdown } from '../src/report.js';
import { HISTORY_RUNS, isFullRun, readHistory, recordedRun, sourceCommit, withRun, writeHistory, type RecordedRun } from '../src/run-history.js';

// Every subject the targets compare, at 100 ops/s in each of three rounds.
const SUBJECTS = [
  'redis/fencelock',
  'redis/node-redlock',
  'redis/redis-semaphore-mutex',
  'redis/raw-ioredis',
  'redlock/fencelock',
  'redlock/node-redlock',
  'redlock/redis-semaphore-redlock-mutex',
  'zookeeper/fencelock',
  'zookeeper/raw-recipe',
  'etcd/fencelock',
  'etcd/raw-txn',
];

const MACHINE = { cpu: 'Test CPU', cores: 2 };

const even = (subject: string, rounds: readonly number[] = [100, 100, 100]): PerformanceInputs['uncontended'][number] => ({ subject, opsPerSec: rounds[1] ?? 0, roundOpsPerSec: rounds });

function inputs(overrides: { uncontended?: Record<string, number[]>; parallelKeys?: Record<string, number[]> } = {}): PerformanceInputs {
  const rows = (given: Record<string, number[]> = {}) => SUBJECTS.map((subject) => even(subject, given[subject]));
  return {
    uncontended: rows(overrides.uncontended),
    parallelKeys: rows(overrides.parallelKeys),
    allocation: [
      { subject: 'memory/fencelock', ownBytesPerCycle: 3_000 },
      { subject: 'redis/fencelock', ownBytesPerCycle: 5_001 },
    ],
    waiters: [
      { subject: 'redis/fencelock', heapPerWaiterBytes: 3_500 },
      { subject: 'redis/redis-semaphore-mutex', heapPerWaiterBytes: 5_000 },
    ],
  };
}

const byId = (targets: ReturnType<typeof performanceTargets>, id: string) => {
  const target = targets.find((t) => t.id === id);
  if (target === undefined) throw new Error(`no target ${id}`);
  return target;
};

describe("the performance issue's targets", () => {
  it('checks every ratio the issue names, in both scenarios, with its own least ratio', () => {
    const targets = performanceTargets(
      inputs({
        // The median of the per-round ratios (1.2, 0.84, 0.86), not the ratio of the medians (100 / 100).
        uncontended: { 'redis/fencelock': [120, 84, 86] },
        // 0.82 × raw ioredis at 64 keys meets ≥ 0.8; 0.99 × the raw etcd pair misses ≥ 1.0.
        parallelKeys: { 'redis/fencelock': [82, 82, 82], 'etcd/fencelock': [99, 99, 99] },
      }),
    );
    expect(targets.filter((t) => t.id.startsWith('uncontended:'))).toHaveLength(7);
    expect(targets.filter((t) => t.id.startsWith('parallel-keys:'))).toHaveLength(7);
    // Uncontended, the raw ioredis target is 0.85: 0.86 meets it, and misses the peers' 1.0.
    expect(byId(targets, 'uncontended:redis/fencelock:redis/raw-ioredis')).toMatchObject({ measured: 0.86, met: true, target: 'Redis uncontended ≥ 0.85 × raw ioredis' });
    expect(byId(targets, 'uncontended:redis/fencelock:redis/node-redlock')).toMatchObject({ measured: 0.86, met: false });
    expect(byId(targets, 'parallel-keys:redis/fencelock:redis/raw-ioredis')).toMatchObject({ measured: 0.82, met: true, target: 'Redis 64 keys ≥ 0.80 × raw ioredis' });
    expect(byId(targets, 'parallel-keys:redis/fencelock:redis/node-redlock')).toMatchObject({ measured: 0.82, met: false });
    expect(byId(targets, 'parallel-keys:etcd/fencelock:etcd/raw-txn')).toMatchObject({ measured: 0.99, met: false });
    expect(byId(targets, 'uncontended:zookeeper/fencelock:zookeeper/raw-recipe')).toMatchObject({ measured: 1, met: true });
  });

  it('decides on the measured ratio, not on its rounded figure, and shows the digit that decides', () => {
    // 0.995 × the raw recipe would show as 1.00, 0.8496 × raw ioredis as 0.85: each rounded across its threshold.
    const targets = performanceTargets(inputs({ uncontended: { 'zookeeper/fencelock': [99.5, 99.5, 99.5], 'redis/fencelock': [84.96, 84.96, 84.96] } }));
    expect(byId(targets, 'uncontended:zookeeper/fencelock:zookeeper/raw-recipe')).toMatchObject({ measured: 0.995, met: false });
    expect(byId(targets, 'uncontended:redis/fencelock:redis/raw-ioredis')).toMatchObject({ measured: 0.8496, met: false });
    expect(byId(targets, 'uncontended:redis/fencelock:redis/node-redlock')).toMatchObject({ measured: 0.85, met: false });
  });

  it('checks the bytes and the heap per waiter, and misses what was not measured', () => {
    const targets = performanceTargets(inputs());
    expect(byId(targets, 'own-bytes:memory')).toMatchObject({ measured: 3_000, met: true });
    expect(byId(targets, 'own-bytes:redis')).toMatchObject({ measured: 5_001, met: false });
    expect(byId(targets, 'heap-per-waiter:redis')).toMatchObject({ measured: 0.7, met: true });
    const partial = performanceTargets({ ...inputs(), uncontended: inputs().uncontended.filter((r) => r.subject !== 'etcd/raw-txn'), allocation: undefined });
    for (const id of ['uncontended:etcd/fencelock:etcd/raw-txn', 'own-bytes:memory']) {
      expect(byId(partial, id).measured).toBeNaN();
      expect(byId(partial, id).met).toBe(false);
    }
  });

  it('shows this run beside the recorded ones, newest first, and whether a target held in both', () => {
    const now = performanceTargets(inputs({ uncontended: { 'redis/fencelock': [120, 120, 120] } }));
    const missedBefore = now.map((t) => (t.id === 'uncontended:redis/fencelock:redis/node-redlock' ? { ...t, measured: 0.9, met: false } : t));
    const older = recordedRun('2026-01-01T10:00:00.000Z', 'aaaaaaa', MACHINE, now);
    const previous = recordedRun('2026-01-02T10:00:00.000Z', 'bbbbbbb + changes', MACHINE, missedBefore);
    // A later run on another machine is neither shown nor "the one before".
    const elsewhere = recordedRun('2026-01-02T12:00:00.000Z', 'ddddddd', { cpu: 'Other CPU', cores: 64 }, now);
    const lines = performanceTargetsMarkdown(now, { startedAt: '2026-01-03T10:00:00.000Z', commit: 'ccccccc', machine: MACHINE }, [older, elsewhere, previous]);
    expect(lines.join('\n')).toContain('runs on this machine (Test CPU, 2 cores)');
    expect(lines.join('\n')).not.toContain('ddddddd');
    const header = lines.find((line) => line.startsWith('| target |')) ?? '';
    expect(header).toContain('this run (2026-01-03 10:00 UTC, ccccccc)');
    expect(header.indexOf('bbbbbbb + changes')).toBeLessThan(header.indexOf('aaaaaaa'));
    const row = (target: string) => lines.find((line) => line.startsWith(`| ${target} |`)) ?? '';
    expect(row('Redis uncontended ≥ 1.00 × node-redlock')).toBe('| Redis uncontended ≥ 1.00 × node-redlock | 1.2 met | 0.9 **missed** | 1.2 met | **no** |');
    expect(row('Redis uncontended ≥ 1.00 × redis-semaphore Mutex').endsWith('| yes |')).toBe(true);
    // Without an earlier run there is nothing to hold in both.
    const alone = performanceTargetsMarkdown(now, { startedAt: '2026-01-03T10:00:00.000Z', machine: MACHINE }, [elsewhere]);
    expect(alone.find((line) => line.startsWith('| Redis uncontended ≥ 1.00 × node-redlock |'))).toBe('| Redis uncontended ≥ 1.00 × node-redlock | 1.2 met | — |');
  });

  it('sets runs beside each other only when the client and the servers were placed on CPUs alike', () => {
    const now = performanceTargets(inputs());
    const placed = { ...MACHINE, placement: 'client on CPU 0, servers on CPU 1' };
    const shared = recordedRun('2026-01-02T10:00:00.000Z', 'aaaaaaa', MACHINE, now);
    const apart = recordedRun('2026-01-02T11:00:00.000Z', 'bbbbbbb', placed, now);
    expect(apart.machine).toBe('Test CPU, 2 cores; client on CPU 0, servers on CPU 1');
    const placedRun = performanceTargetsMarkdown(now, { startedAt: '2026-01-03T10:00:00.000Z', machine: placed }, [shared, apart]).join('\n');
    expect(placedRun).toContain('bbbbbbb');
    expect(placedRun).not.toContain('aaaaaaa');
    const sharedRun = performanceTargetsMarkdown(now, { startedAt: '2026-01-03T10:00:00.000Z', machine: MACHINE }, [shared, apart]).join('\n');
    expect(sharedRun).toContain('aaaaaaa');
    expect(sharedRun).not.toContain('bbbbbbb');
    // The report says where the processes ran.
    const empty = { uncontended: [], parallelKeys: [], contention: [], waiters: [], memory: [], ratios: [], targets: [], errors: {}, settings: {} };
    expect(renderMarkdown({ ...empty, startedAt: '2026-01-03T10:00:00.000Z', machine: { ...machineInfo(), placement: placed.placement } })).toContain(
      'CPUs in the single-client sections (1, 3a, 1c, 1d and 4b): client on CPU 0, servers on CPU 1 (`taskset`',
    );
    expect(renderMarkdown({ ...empty, startedAt: '2026-01-03T10:00:00.000Z', machine: machineInfo() })).toContain('Client and servers shared every CPU in every section.');
  });

  it('splits each throughput ratio into what the requests alone reach and what the library keeps, and names what keeps a missed target below', () => {
    const twins = ['redis/protocol-twin', 'redlock/protocol-twin', 'zookeeper/protocol-twin', 'etcd/protocol-twin'];
    const base = inputs({ uncontended: { 'redis/fencelock': [90, 90, 90], 'redlock/fencelock': [95, 95, 95] } });
    const rates: Record<string, number[]> = { 'redis/protocol-twin': [95, 95, 95], 'redlock/protocol-twin': [110, 110, 110] };
    const withTwins = { ...base, uncontended: [...base.uncontended, ...twins.map((twin) => even(twin, rates[twin]))] };
    const targets = performanceTargets(withTwins);
    expect(byId(targets, 'uncontended:redis/fencelock:redis/node-redlock').split).toEqual({ least: 1, protocol: 0.95, library: 0.95 });
    expect(byId(targets, 'uncontended:redlock/fencelock:redlock/node-redlock').split).toEqual({ least: 1, protocol: 1.1, library: 0.86 });
    // No twin measured (64 keys here): no split.
    expect(byId(targets, 'parallel-keys:redis/fencelock:redis/node-redlock').split).toBeUndefined();
    const before = recordedRun('2026-01-02T10:00:00.000Z', 'bbbbbbb', MACHINE, targets.map((t) => (t.split === undefined ? t : { ...t, split: { ...t.split, protocol: 0.5 } })));
    const lines = performanceTargetsMarkdown(targets, { startedAt: '2026-01-03T10:00:00.000Z', machine: MACHINE }, [before]);
    const row = (target: string) => lines.find((line) => line.startsWith(`| ${target} |`) && line.split('|').length === 9) ?? '';
    expect(row('Redis uncontended ≥ 1.00 × node-redlock')).toBe('| Redis uncontended ≥ 1.00 × node-redlock | 0.90 | 0.95 | 0.95 | 0.50 | 0.95 | the requests: alone they reach 0.95, below 1.00 |');
    expect(row('Redlock-5 uncontended ≥ 1.00 × node-redlock (5 masters)')).toBe('| Redlock-5 uncontended ≥ 1.00 × node-redlock (5 masters) | 0.95 | 1.10 | 0.86 | 0.50 | 0.86 | the library: the requests alone reach 1.10 |');
    // 0.9 ≥ 0.85 × raw ioredis.
    expect(row('Redis uncontended ≥ 0.85 × raw ioredis').endsWith('| met |')).toBe(true);
  });

  it('puts the section and the commit measured in docs/BENCHMARKS.md', () => {
    const empty = { uncontended: [], parallelKeys: [], contention: [], waiters: [], memory: [], ratios: [], targets: [], errors: {}, settings: {} };
    const markdown = renderMarkdown({ ...empty, startedAt: '2026-01-03T10:00:00.000Z', machine: machineInfo(), commit: 'ccccccc', performanceTargets: performanceTargets(inputs()), earlierRuns: [] });
    expect(markdown).toContain('Measured 2026-01-03T10:00:00.000Z at commit ccccccc on ');
    expect(markdown).toContain('## Targets of the performance issue: this run and the full runs before it');
    // Older results, without either, render as before.
    const older = renderMarkdown({ ...empty, startedAt: '2026-01-03T10:00:00.000Z', machine: machineInfo() });
    expect(older).not.toContain('at commit');
    expect(older).not.toContain('## Targets of the performance issue');
  });
});

describe('the run history', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  const scratch = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'fencelock-bench-history-'));
    dirs.push(dir);
    return dir;
  };
  const run = (startedAt: string, commit = 'abcdef0'): RecordedRun => ({ startedAt, commit, machine: 'Test CPU, 2 cores', targets: [{ id: 'own-bytes:redis', measured: 4_000, met: true }] });

  it('reads back the split of a throughput target as written, and none where none was recorded', async () => {
    const path = pathToFileURL(join(await scratch(), 'history.json'));
    const split = { least: 1, protocol: 0.93, library: 1.03 };
    const recorded: RecordedRun = { startedAt: '2026-01-01T00:00:00.000Z', commit: 'abcdef0', machine: 'Test CPU, 2 cores', targets: [{ id: 'uncontended:etcd/fencelock:etcd/raw-txn', measured: 0.95, met: false, split }, { id: 'own-bytes:redis', measured: 4_000, met: true }] };
    await writeHistory(path, [recorded]);
    expect(await readHistory(path)).toEqual([recorded]);
  });

  it('keeps runs oldest first, replaces a run of the same start, and keeps the last few', () => {
    const history = withRun([run('2026-01-02T00:00:00.000Z'), run('2026-01-01T00:00:00.000Z')], run('2026-01-02T00:00:00.000Z', 'fedcba9'));
    expect(history.map((r) => [r.startedAt, r.commit])).toEqual([
      ['2026-01-01T00:00:00.000Z', 'abcdef0'],
      ['2026-01-02T00:00:00.000Z', 'fedcba9'],
    ]);
    let long: RecordedRun[] = [];
    for (let day = 1; day <= HISTORY_RUNS + 3; day += 1) long = withRun(long, run(`2026-02-${String(day).padStart(2, '0')}T00:00:00.000Z`));
    expect(long).toHaveLength(HISTORY_RUNS);
    expect(long[0]?.startedAt).toBe('2026-02-04T00:00:00.000Z');
  });

  it('reads back what it wrote, a target not measured included; no file is no history; a broken file throws', async () => {
    const path = pathToFileURL(join(await scratch(), 'history.json'));
    expect(await readHistory(path)).toEqual([]);
    const written = [run('2026-01-01T00:00:00.000Z'), { ...run('2026-01-02T00:00:00.000Z'), targets: [{ id: 'own-bytes:redis', measured: Number.NaN, met: false }] }];
    await writeHistory(path, written);
    expect(await readFile(path, 'utf8')).toContain('"measured": null');
    const read = await readHistory(path);
    expect(read[0]).toEqual(written[0]);
    expect(read[1]?.targets[0]?.measured).toBeNaN();
    await writeFile(path, '{ not json');
    await expect(readHistory(path)).rejects.toThrow(/is not the bench's run history/);
  });

  it('records a full run only: built, with no BENCH_* setting', () => {
    expect(isFullRun({ FENCELOCK_BENCH_BUILT: '1', PATH: '/usr/bin' })).toBe(true);
    expect(isFullRun({ FENCELOCK_BENCH_BUILT: '1', BENCH_ONLY: 'redis/' })).toBe(false);
    expect(isFullRun({ FENCELOCK_BENCH_BUILT: '1', BENCH_STRESS: '0' })).toBe(false);
    expect(isFullRun({ PATH: '/usr/bin' })).toBe(false);
  });

  it('names the commit measured, and says when there is none', async () => {
    expect(sourceCommit(new URL('../../../', import.meta.url))).toMatch(/^[0-9a-f]{7}( \+ changes)?$/);
    expect(sourceCommit(pathToFileURL(`${await scratch()}/`))).toBe('unknown');
  });
});
