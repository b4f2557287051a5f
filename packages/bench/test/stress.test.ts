/**
 * The stress section's pure parts: its targets written as met or missed (with the figure), the
 * request timeouts the herd is checked against, the command line. No servers, no timing.
 */
import { describe, expect, it } from 'vitest';
import type { ContentionResult } from '../src/contention.js';
import type { HeldLocksResult } from '../src/held-locks.js';
import type { HerdResult } from '../src/herd.js';
import { fifoFloorMarkdown, stressTargets } from '../src/report.js';
import { benchCommand, type Load, type StressResults } from '../src/stress.js';
import type { Backend, SubjectKind } from '../src/subjects.js';

const who = (backend: Backend, name: string, kind: SubjectKind = 'fencelock') => ({ subject: `${backend}/${name}`, backend, kind, label: `${backend} ${name}` });

const herd = (backend: Backend, fields: Partial<HerdResult> = {}): HerdResult => ({
  ...who(backend, 'fencelock'),
  waiters: 1_000,
  waitMs: 200,
  releaseAfterMs: 100,
  boundMs: 30_200,
  settled: 1_000,
  unsettled: 0,
  granted: 5,
  timedOut: 995,
  otherFailures: {},
  overrunP50Ms: 5,
  overrunP99Ms: 20,
  overrunMaxMs: 30,
  releaseToFirstGrantMs: 3,
  serverRequests: 50,
  serverRequestsPerGrant: 10,
  requestsCounted: 'requests',
  requestTimeout: { ms: 100, source: 'a test value' },
  counters: {},
  ...fields,
});

const held = (backend: Backend, load: Load, fields: Partial<HeldLocksResult> = {}): HeldLocksResult & { load: Load } => ({
  ...who(backend, 'fencelock'),
  load,
  ttlMs: 3_000,
  expiry: 'per-lock',
  locksRequested: 10_000,
  locksHeld: 10_000,
  locksLost: 0,
  lostReasons: {},
  acquireFailures: {},
  locksHeldAtEnd: 10_000,
  acquireSeconds: 1,
  windowSeconds: 6,
  cpuSecondsPerSecond: 0.1,
  serverRequestsPerSec: 10,
  requestsPerLockPerRenewal: 0.01,
  roundTripsCounted: 'requests',
  extendedEventsPerSec: 1,
  heapPerLockBytes: 1,
  counters: {},
  ...fields,
});

const fight = (backend: Backend, name: string, kind: SubjectKind, load: Load, acquisitionsPerSec: number, waiterWinShare: number): ContentionResult & { load: Load } => ({
  ...who(backend, name, kind),
  load,
  clients: 4,
  acquisitions: 100,
  seconds: 1,
  acquisitionsPerSec,
  handoffP50Ms: 1,
  handoffP90Ms: 2,
  handoffP99Ms: 3,
  handoffMaxMs: 4,
  handoffs: 90,
  differentClientShare: 0.9,
  waiterWinShare,
  maxWaitMs: 10,
  perClient: [25, 25, 25, 25],
  failures: 0,
  clientCpuPerAcquisitionUs: 500,
  warmupAcquisitions: 0,
});

const backends: readonly Backend[] = ['redis', 'redlock', 'etcd', 'zookeeper'];
const loads: readonly Load[] = ['quiet', 'loaded'];

function results(overrides: Partial<StressResults> = {}): StressResults {
  return {
    settings: { hogs: 3, herdWaiters: 1_000, heldLocks: 10_000 },
    command: 'pnpm bench',
    herd: backends.map((backend) => herd(backend)),
    heldLocks: backends.flatMap((backend) => loads.map((load) => held(backend, load))),
    contention: (['redis', 'redlock'] as const).flatMap((backend) =>
      loads.flatMap((load) => [
        fight(backend, 'fencelock', 'fencelock', load, 300, 0.95),
        fight(backend, 'fencelock-barging', 'fencelock', load, 250, 0.1),
        fight(backend, 'node-redlock', 'peer', load, 100, 0.02),
        fight(backend, 'redis-semaphore', 'peer', load, 200, 0.2),
      ]),
    ),
    hogRuns: [],
    ...overrides,
  };
}

const find = (checks: ReturnType<typeof stressTargets>, ...parts: string[]) => {
  const found = checks.filter((check) => parts.every((part) => check.target.includes(part)));
  expect(found).toHaveLength(1);
  return found[0];
};

describe('stress targets', () => {
  it('are all met by a run that meets them, and all belong to the stress section', () => {
    const checks = stressTargets(results());
    expect(checks).toHaveLength(4 * 2 + 4 * 2 + 2 * 2 + 2 * 2 * 3);
    for (const check of checks) expect(check).toMatchObject({ met: true, section: 'stress' });
    expect(find(checks, 'Redis contention, loaded:', 'acq/s')?.measured).toBe(1.5);
    // The barging hand-off is checked on its own figure, not the default's.
    expect(find(checks, "Redis contention, loaded, handoff 'barging'", 'acq/s')?.measured).toBe(1.25);
    expect(find(checks, 'etcd herd:', 'overrun')?.target).toContain('100 ms (a test value)');
  });

  it('write a missed target as missed, with its figure', () => {
    const checks = stressTargets(
      results({
        herd: [herd('redis', { unsettled: 3, settled: 997 }), herd('redlock', { overrunP99Ms: 150 }), herd('etcd'), herd('zookeeper')],
        heldLocks: [
          held('redis', 'quiet'),
          held('redis', 'loaded', { locksLost: 2, locksHeldAtEnd: 9_998 }),
          held('redlock', 'quiet', { requestsPerLockPerRenewal: 0.5 }),
          held('redlock', 'loaded', { locksHeld: 9_000, locksHeldAtEnd: 9_000 }),
        ],
        contention: [fight('redis', 'fencelock', 'fencelock', 'loaded', 100, 0.5), fight('redis', 'node-redlock', 'peer', 'loaded', 400, 0)],
      }),
    );
    expect(find(checks, 'Redis herd', 'every call settled')).toMatchObject({ measured: 3, met: false });
    expect(find(checks, 'Redlock herd:', 'overrun')).toMatchObject({ measured: 150, met: false });
    expect(find(checks, 'Redis: 0 of', 'loaded')).toMatchObject({ measured: 2, met: false });
    // Locks never taken count too: 0 of 10,000 lost needs 10,000 held.
    expect(find(checks, 'Redlock: 0 of', 'loaded')).toMatchObject({ measured: 1_000, met: false });
    expect(find(checks, 'Redlock: <', 'quiet')).toMatchObject({ measured: 0.5, met: false });
    // Renewals that lose locks have no request figure.
    expect(find(checks, 'Redis: <', 'loaded')?.met).toBe(false);
    expect(find(checks, 'Redis contention, loaded:', 'acq/s')).toMatchObject({ measured: 0.25, met: false });
    expect(find(checks, 'Redis contention, loaded:', 'waiting client')).toMatchObject({ measured: 0.5, met: false });
    // What did not run is missed, not silently dropped.
    expect(find(checks, 'Redis contention, quiet:', 'acq/s')?.met).toBe(false);
    expect(find(checks, "Redis contention, loaded, handoff 'barging'", 'acq/s')?.met).toBe(false);
    expect(find(checks, 'etcd: 0 of', 'quiet')?.met).toBe(false);
  });

  it('count a herd in which nothing timed out as no overrun', () => {
    const checks = stressTargets(results({ herd: backends.map((backend) => herd(backend, { timedOut: 0, granted: 1_000, overrunP99Ms: Number.NaN })) }));
    expect(find(checks, 'ZooKeeper herd:', 'overrun')).toMatchObject({ measured: 0, met: true });
  });
});

describe('bench command', () => {
  it('names the BENCH_ variables that were set, sorted, then pnpm bench', () => {
    expect(benchCommand({ PATH: '/bin', BENCH_HOGS: '1', BENCH_ONLY: 'redis/', BENCH_STRESS: '' })).toBe('BENCH_HOGS=1 BENCH_ONLY=redis/ pnpm bench');
    expect(benchCommand({})).toBe('pnpm bench');
  });
});

describe('the FIFO floor beside the contention targets', () => {
  it('says, per load, what the bare hand-off made against the better peer and what fencelock made against it', () => {
    const contention = [
      fight('redis', 'fencelock', 'fencelock', 'quiet', 450, 0.99),
      fight('redis', 'fifo-floor', 'raw', 'quiet', 500, 1),
      fight('redis', 'node-redlock', 'peer', 'quiet', 400, 0.01),
      fight('redis', 'redis-semaphore', 'peer', 'quiet', 625, 0.05),
      fight('redlock', 'fifo-floor', 'raw', 'quiet', 9_999, 1),
      fight('redis', 'fencelock', 'fencelock', 'loaded', 200, 1),
      fight('redis', 'redis-semaphore', 'peer', 'loaded', 300, 0.05),
    ];
    const text = fifoFloorMarkdown(contention).join('\n');
    expect(text).toContain('Quiet: the FIFO floor made 500 acq/s with 100 % to waiters, 0.80 × redis redis-semaphore (625 acq/s, 5 % to waiters); @fencelock/redis made 0.90 × the floor.');
    // No floor measured loaded: no sentence for it.
    expect(text).not.toContain('Loaded:');
    expect(fifoFloorMarkdown(contention.filter((r) => r.subject !== 'redis/fifo-floor'))).toEqual([]);
    // No fair-lock floor measured: nothing said of it.
    expect(text).not.toContain('The fair-lock floor made');
  });

  it('adds the fair-lock floor where it was measured: against the better peer, and fencelock against it', () => {
    const contention = [
      fight('redis', 'fencelock', 'fencelock', 'quiet', 450, 0.99),
      fight('redis', 'fifo-floor', 'raw', 'quiet', 500, 1),
      fight('redis', 'fair-floor', 'raw', 'quiet', 600, 1),
      { ...fight('redis', 'handoff-twin', 'raw', 'quiet', 550, 1), clientCpuPerAcquisitionUs: 400 },
      fight('redis', 'redis-semaphore', 'peer', 'quiet', 625, 0.05),
    ];
    const text = fifoFloorMarkdown(contention).join('\n');
    expect(text).toContain(
      '@fencelock/redis made 0.90 × the floor. The fair-lock floor made 600 acq/s with 100 % to waiters, 0.96 × the better peer; @fencelock/redis made 0.75 × it. ' +
        "Its requests without its code (the hand-off twin) made 550 acq/s, 0.88 × the better peer, with 400 µs of client CPU per acquisition against fencelock's 500.",
    );
  });
});
