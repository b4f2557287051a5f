/**
 * Smoke run of the bench so it cannot rot: every scenario function against real servers with tiny
 * counts. Asserts shapes and that work happened — never a figure or a wall-clock threshold (the
 * figures come only from `pnpm bench`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDedicatedServers, type BenchServers } from '../src/bench-servers.js';
import { buildCharts } from '../src/charts.js';
import { runContention, type ContentionResult } from '../src/contention.js';
import { startCpuHogs } from '../src/cpu-hogs.js';
import { runHeldLocks, type HeldLocksResult } from '../src/held-locks.js';
import { runHerd, type HerdResult } from '../src/herd.js';
import { runMemory, type MemoryResult } from '../src/memory.js';
import { runParallelKeysGroup, type ParallelKeysResult } from '../src/parallel-keys.js';
import { checkTargets, computeRatios, machineInfo, ONE_WAKEUP_TOLERANCE, renderMarkdown } from '../src/report.js';
import { benchCommand, type StressResults } from '../src/stress.js';
import { subjects, type Backend, type Subject } from '../src/subjects.js';
import { runUncontendedGroup, type UncontendedResult } from '../src/uncontended.js';
import { runWaiters, type WaitersResult } from '../src/waiters.js';

const uncontended: UncontendedResult[] = [];
const contention: ContentionResult[] = [];
const parallelKeys: ParallelKeysResult[] = [];
const memory: MemoryResult[] = [];
const waiters: WaitersResult[] = [];
const heldLocks: HeldLocksResult[] = [];
const herds: HerdResult[] = [];
const backends: readonly Backend[] = ['redis', 'redlock', 'etcd', 'zookeeper', 'memory'];
// Subjects that differ only under contention run in the contention scenarios alone, as in `pnpm bench`.
const ofBackend = (backend: Backend): Subject[] => subjects().filter((subject) => subject.backend === backend && subject.contentionOnly !== true);
const rethrow = (subject: Subject, error: unknown): never => {
  throw new Error(`${subject.id} failed`, { cause: error });
};
/** Whether a process with this PID exists (signal 0 only checks). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
};

describe('bench smoke', () => {
  for (const backend of backends) {
    it(`uncontended, interleaved in 2 rounds: ${backend}`, async () => {
      const group = ofBackend(backend);
      const results = await runUncontendedGroup(group, { maxCycles: 6, maxMs: 10_000, rounds: 2, warmupCycles: 1 }, rethrow);
      expect(results.map((r) => r.subject)).toEqual(group.map((s) => s.id));
      for (const result of results) {
        expect(result.cycles).toBeGreaterThan(0);
        expect(result.cycles).toBeLessThanOrEqual(6);
        expect(result.roundOpsPerSec).toHaveLength(2);
        expect(result.opsPerSec).toBeGreaterThan(0);
        expect(result.bestOpsPerSec).toBeGreaterThanOrEqual(result.opsPerSec);
        expect(result.p90Ms).toBeGreaterThanOrEqual(result.p50Ms);
        expect(result.p99Ms).toBeGreaterThanOrEqual(result.p90Ms);
        expect(result.maxMs).toBeGreaterThanOrEqual(result.p99Ms);
      }
      uncontended.push(...results);
    });
  }

  for (const backend of backends) {
    it(`4 keys in parallel, interleaved in 2 rounds: ${backend}`, async () => {
      const group = ofBackend(backend);
      const results = await runParallelKeysGroup(group, { keys: 4, maxCyclesPerKey: 2, maxMs: 10_000, rounds: 2 }, rethrow);
      expect(results.map((r) => r.subject)).toEqual(group.map((s) => s.id));
      for (const result of results) {
        expect(result).toMatchObject({ keys: 4 });
        // One cycle per key per round (2 cycles per key over 2 rounds).
        expect(result.cycles).toBe(8);
        expect(result.roundOpsPerSec).toHaveLength(2);
      }
      parallelKeys.push(...results);
    });
  }

  // The baselines of the stress section's contention part (a bare BLPOP/LPUSH hand-off, a minimal fair lock,
  // fencelock's contended requests without its code) run here too.
  const baselines = new Set(['redis/fifo-floor', 'redis/fair-floor', 'redis/handoff-twin']);
  for (const subject of subjects().filter((s) => (s.kind === 'fencelock' || baselines.has(s.id)) && s.inProcess !== true)) {
    it(`contention (2 processes): ${subject.id}`, async () => {
      const result = await runContention(subject, { clients: 2, maxMs: 1_500, maxAcquisitionsPerClient: 5, waitMs: 1_500 });
      expect(result).toMatchObject({ subject: subject.id, clients: 2 });
      expect(result.acquisitions).toBeGreaterThan(0);
      expect(result.acquisitions).toBeLessThanOrEqual(10);
      expect(result.acquisitionsPerSec).toBeGreaterThan(0);
      expect(result.perClient).toHaveLength(2);
      expect(result.perClient.reduce((a, b) => a + b, 0)).toBe(result.acquisitions);
      expect(result.differentClientShare).toBeGreaterThanOrEqual(0);
      expect(result.differentClientShare).toBeLessThanOrEqual(1);
      expect(result.waiterWinShare).toBeGreaterThanOrEqual(0);
      expect(result.waiterWinShare).toBeLessThanOrEqual(1);
      expect(result.handoffs).toBeLessThanOrEqual(result.acquisitions);
      // Each worker's loop took some CPU: a figure that was never measured would be 0 or NaN.
      expect(result.clientCpuPerAcquisitionUs).toBeGreaterThan(0);
      contention.push(result);
    });
  }

  it('contention with a warm-up reports the measured window only', async () => {
    const [subject] = ofBackend('redis').filter((s) => s.kind === 'fencelock');
    if (subject === undefined) throw new Error('no redis fencelock subject');
    const result = await runContention(subject, { clients: 2, maxMs: 400, maxAcquisitionsPerClient: 10_000, waitMs: 1_500, warmupMs: 800 });
    // The processes contended through the warm-up, then in the window.
    expect(result.warmupAcquisitions).toBeGreaterThan(0);
    expect(result.acquisitions).toBeGreaterThan(0);
    // Holds of ≥ 1 ms do not overlap (one lock): no more of them than ms in the window, which the
    // warm-up's acquisitions, counted in, would exceed.
    expect(result.acquisitions).toBeLessThanOrEqual(Math.ceil(result.seconds * 1000));
    expect(result.clientCpuPerAcquisitionUs).toBeGreaterThan(0);
  });

  it('refuses multi-process contention for the in-process provider', async () => {
    const [memorySubject] = ofBackend('memory');
    if (memorySubject === undefined) throw new Error('no memory subject');
    await expect(runContention(memorySubject, { clients: 2, maxMs: 100, maxAcquisitionsPerClient: 1 })).rejects.toThrow();
  });

  for (const subject of subjects().filter((s) => s.kind === 'fencelock' && s.contentionOnly !== true)) {
    it(`memory: ${subject.id}`, async () => {
      const result = await runMemory(subject, { maxCycles: 5, maxMs: 5_000, warmupCycles: 1 });
      expect(result).toMatchObject({ subject: subject.id });
      expect(result.cycles).toBeGreaterThan(0);
      expect(result.cycles).toBeLessThanOrEqual(5);
      expect(result.heapBeforeBytes).toBeGreaterThan(0);
      expect(result.heapAfterBytes).toBeGreaterThan(0);
      memory.push(result);
    });
  }

  describe('counted on dedicated servers', () => {
    let servers: BenchServers | undefined;
    const started = (): BenchServers => {
      if (servers === undefined) throw new Error('dedicated servers did not start');
      return servers;
    };
    beforeAll(async () => {
      // Small but of every kind: the code path `pnpm bench` takes, with 3 Redlock masters and single-node ensembles.
      servers = await startDedicatedServers({ redlockMasters: 3, zooKeeperSize: 1, etcdSize: 1 });
    }, 60_000);
    afterAll(async () => {
      await servers?.stop();
    }, 30_000);

    for (const backend of backends) {
      it(`3 waiters, server-counted wake-ups: ${backend}`, async () => {
        const subject = subjects(started().addresses).find((s) => s.backend === backend && s.kind === 'fencelock');
        if (subject === undefined) throw new Error(`no fencelock subject for ${backend}`);
        const result = await runWaiters(subject, { waiters: 3, waitMs: 10_000, settleMs: 100, redlockMasters: 3 }, started().probe(backend));
        expect(result).toMatchObject({ subject: subject.id, waiters: 3, granted: 3 });
        expect(result.drainPerSec).toBeGreaterThan(0);
        // The first grant needed a wake-up from the server. The waiters of one process queue in
        // core's local line: a watch fires for the head of that line only (ZooKeeper, etcd); where
        // a wake-up is an acquire attempt (Redis, Redlock, memory), the head makes one to queue
        // and one to take the lock. ZooKeeper's count also has the releasing holder hearing its own
        // delete (each holder keeps a watch for its node), at most one more: the waiters queue behind
        // a lock their own process holds, so their first listing leaves no watch on the lock znode
        // (one that did would fire once each: 2.33 here). Every waiter woken on every release would
        // be 3 here.
        expect(result.wakeupsPerRelease).toBeGreaterThan(0);
        const atMost = backend === 'etcd' ? 1 : 2;
        expect(result.wakeupsPerRelease).toBeLessThanOrEqual(atMost + ONE_WAKEUP_TOLERANCE);
        expect(result.wakeupsCounted).toEqual(expect.any(String));
        waiters.push(result);
      });
    }

    for (const backend of backends) {
      it(`20 held locks with auto-extension: ${backend}`, async () => {
        const subject = subjects(started().addresses).find((s) => s.backend === backend && s.openProvider !== undefined);
        if (subject === undefined) throw new Error(`no provider subject for ${backend}`);
        const result = await runHeldLocks(subject, started().probe(backend), { locks: 20, ttlMs: 2_000, windowMs: 500, redlockMasters: 3 });
        expect(result).toMatchObject({ subject: subject.id, locksRequested: 20, locksHeld: 20, acquireFailures: {} });
        // Correctness, not speed: auto-extension keeps every lock for the whole window.
        expect(result.locksLost).toBe(0);
        expect(result.lostReasons).toEqual({});
        expect(result.locksHeldAtEnd).toBe(result.locksHeld);
        expect(result.expiry).toBe(backend === 'etcd' || backend === 'zookeeper' ? 'session' : 'per-lock');
        expect(result.cpuSecondsPerSecond).toBeGreaterThan(0);
        expect(result.serverRequestsPerSec).toBeGreaterThanOrEqual(0);
        expect(result.roundTripsCounted).toEqual(expect.any(String));
        heldLocks.push(result);
      });
    }

    for (const backend of backends) {
      it(`herd of 20 waiters: ${backend}`, async () => {
        const subject = subjects(started().addresses).find((s) => s.backend === backend && s.openProvider !== undefined);
        if (subject === undefined) throw new Error(`no provider subject for ${backend}`);
        const result = await runHerd(subject, started().probe(backend), { waiters: 20, waitMs: 200, releaseAfterMs: 100 });
        // Every call settled, each one either granted or timed out; how many of each is timing, not asserted.
        expect(result).toMatchObject({ subject: subject.id, waiters: 20, waitMs: 200, settled: 20, unsettled: 0, otherFailures: {} });
        expect(result.granted + result.timedOut).toBe(20);
        if (result.timedOut > 0) {
          expect(result.overrunP99Ms).toBeGreaterThanOrEqual(result.overrunP50Ms);
          expect(result.overrunMaxMs).toBeGreaterThanOrEqual(result.overrunP99Ms);
        }
        expect(result.releaseToFirstGrantMs === undefined).toBe(result.granted === 0);
        expect(result.serverRequestsPerGrant === undefined).toBe(result.granted === 0);
        expect(result.serverRequests).toBeGreaterThan(0);
        expect(result.requestsCounted).toEqual(expect.any(String));
        expect(result.requestTimeout.source).toEqual(expect.any(String));
        expect(result.requestTimeout.ms === undefined).toBe(backend === 'memory');
        herds.push(result);
      });
    }
  });

  it('CPU hogs: one hog spins for its 1 s and is gone afterwards, by PID', async () => {
    const hogs = await startCpuHogs({ count: 1, maxMs: 1_000 });
    expect(hogs.pids).toHaveLength(1);
    // It ends by itself at its deadline; stop() then has nothing left to kill.
    await hogs.exited;
    const reports = await hogs.stop();
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ pid: hogs.pids[0], ended: 'exit 0' });
    expect(reports[0]?.slices).toBeGreaterThan(0);
    expect(reports[0]?.cpuMs).toBeGreaterThan(0);
    for (const pid of hogs.pids) expect(alive(pid)).toBe(false);
  });

  it('CPU hogs: stop() ends a hog before its deadline, by PID', async () => {
    const hogs = await startCpuHogs({ count: 1, maxMs: 60_000 });
    for (const pid of hogs.pids) expect(alive(pid)).toBe(true);
    const reports = await hogs.stop();
    expect(reports[0]).toMatchObject({ pid: hogs.pids[0], ended: 'signal SIGTERM' });
    expect(reports[0]?.slices).toBeGreaterThan(0);
    for (const pid of hogs.pids) expect(alive(pid)).toBe(false);
    // Stopping twice is harmless.
    expect(await hogs.stop()).toEqual(reports);
  });

  it('renders ratios, targets, charts and the markdown from the results', () => {
    const ratios = computeRatios(uncontended, contention, parallelKeys);
    expect(ratios.length).toBeGreaterThan(0);
    for (const ratio of ratios) expect(Number.isFinite(ratio.ratio)).toBe(true);
    // Interleaved throughput ratios pair their 2 rounds.
    expect(ratios.filter((r) => r.scenario === 'uncontended ops/s').every((r) => r.roundRange?.rounds === 2)).toBe(true);
    // The stress section's shape, filled with this smoke run's small results.
    const stress: StressResults = {
      settings: { hogs: 1, herdWaiters: 20, herdWaitMs: 200, herdReleaseAfterMs: 100, heldLocks: 20, contendingProcesses: 2, contentionMs: 1_500 },
      command: benchCommand({ BENCH_HERD_WAITERS: '20', BENCH_HOGS: '1' }),
      herd: herds,
      heldLocks: heldLocks.flatMap((r) => [{ ...r, load: 'quiet' as const }, { ...r, load: 'loaded' as const }]),
      contention: contention.map((r) => ({ ...r, load: 'quiet' as const })),
      hogRuns: [{ run: 'held locks loaded redis/fencelock', hogs: [{ pid: 1, slices: 2, cpuMs: 100, ended: 'signal SIGTERM' }] }],
    };
    expect(stress.command).toBe('BENCH_HERD_WAITERS=20 BENCH_HOGS=1 pnpm bench');
    const targets = checkTargets(uncontended, contention, waiters, heldLocks, stress);
    expect(targets.length).toBeGreaterThan(0);
    const stressChecks = targets.filter((t) => t.section === 'stress');
    // Per backend: herd settled and overrun; held locks lost quiet and loaded; requests (redis, redlock) and contention (redis, redlock: acq/s, share to waiters, acq/s barging) quiet and loaded.
    expect(stressChecks).toHaveLength(4 * 2 + 4 * 2 + 2 * 2 + 2 * 2 * 3);
    // The smoke herds all settled, and no smoke held lock was lost.
    for (const check of stressChecks.filter((t) => /every call settled|held locks lost/.test(t.target))) expect(check).toMatchObject({ measured: 0, met: true });
    for (const target of targets) expect(typeof target.met).toBe('boolean');
    const charts = buildCharts({ uncontended, parallelKeys, contention });
    expect(charts.map((chart) => chart.file)).toEqual(['uncontended-latency.svg', 'parallel-keys-latency.svg', 'handoff-latency.svg']);
    for (const chart of charts) {
      expect(chart.svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
      expect(chart.svg.trimEnd().endsWith('</svg>')).toBe(true);
    }
    for (const result of uncontended) expect(charts[0]?.svg).toContain(result.label);
    const markdown = renderMarkdown({
      startedAt: new Date(0).toISOString(),
      machine: machineInfo(),
      settings: { secondsPerMeasurement: 1 },
      uncontended,
      parallelKeys,
      contention,
      waiters,
      heldLocks,
      memory,
      stress,
      countedOn: 'dedicated servers',
      charts: charts.map((chart) => ({ path: `bench/${chart.file}`, title: chart.title })),
      ratios,
      targets,
      errors: {},
    });
    for (const heading of ['## Ratios (headline)', '## Targets (issue 7) in this run', '## The seed article side by side with ours', '## 3b. 100 waiters', '## 3c. 20 held locks with auto-extension', '## 4. Memory', '## Stress', '### Herd: 20 waiters']) {
      expect(markdown).toContain(heading);
    }
    for (const chart of charts) expect(markdown).toContain(`](bench/${chart.file})`);
    expect(ratios.some((ratio) => ratio.scenario === '64 keys ops/s')).toBe(true);
    for (const result of uncontended) expect(markdown).toContain(result.label);
  });
});
