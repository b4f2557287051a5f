/**
 * Scenario 3c, many held locks with auto-extension: one provider takes N locks (default 10,000) on
 * distinct keys with a short TTL (per-lock providers: `ttlMs` with `autoExtend` on; session
 * providers: a session / lease of that TTL, renewed by the session's keep-alive), then holds them
 * for a window. Measured over the window: CPU seconds per second of this (the client) process, and
 * the requests the servers received per second (see {@link ROUND_TRIP_DEFINITIONS}); every lock
 * must still be held at the end. Bounded by the lock count, an acquire-phase deadline, the window
 * and a release-phase deadline.
 */
import { randomUUID } from 'node:crypto';
import type { LockHandle, LockProvider } from '@fencelock/core';
import { fullGc } from './memory.js';
import { counterDelta, sumMatching, type CounterDelta, type CounterProbe } from './server-counters.js';
import { round } from './stats.js';
import { subjectFields, type Backend, type Subject, type SubjectFields } from './subjects.js';

/** Bounds of one held-locks measurement. */
export interface HeldLocksOptions {
  /** Locks to take (default 10_000). */
  readonly locks?: number;
  /** Per-lock TTL, or the session / lease TTL of session providers, ms (default 3_000). */
  readonly ttlMs?: number;
  /** Measuring window, ms: several renewal rounds (a renewal round is a third of the TTL). */
  readonly windowMs: number;
  /**
   * Longest acquire phase, ms (default 90_000: ZooKeeper creates two znodes per fresh key, about
   * 200–300 a second on this 2-core machine under the CPU hogs); the window runs with whatever was
   * taken by then.
   */
  readonly acquireMs?: number;
  /** Longest release phase, ms (default {@link DEFAULT_RELEASE_PHASE_MS}). */
  readonly releaseMs?: number;
  /** Concurrent acquires / releases (default 64, as the 64-key scenario). */
  readonly concurrency?: number;
  /** How many Redlock masters the probe sums over (only for the per-master figure; default 5). */
  readonly redlockMasters?: number;
}

/** One subject's held-locks figures. */
export interface HeldLocksResult extends SubjectFields {
  /** Per-lock TTL or session TTL, ms. */
  readonly ttlMs: number;
  /** `per-lock` (each lock renewed) or `session` (one keep-alive for every lock). */
  readonly expiry: 'per-lock' | 'session';
  readonly locksRequested: number;
  /** Locks held when the window started. */
  readonly locksHeld: number;
  /** Locks lost (the provider's `lost` event) from the first acquire to the end of the window. */
  readonly locksLost: number;
  /** Lost locks by the lost error's `reason` (e.g. `expired`, `taken-over`). */
  readonly lostReasons: Readonly<Record<string, number>>;
  /** Acquires that failed in the acquire phase, by error code. */
  readonly acquireFailures: Readonly<Record<string, number>>;
  /** Locks still held (isHeld) at the end of the window. */
  readonly locksHeldAtEnd: number;
  readonly acquireSeconds: number;
  readonly windowSeconds: number;
  /** (user + system CPU time of this process over the window) / window wall time. */
  readonly cpuSecondsPerSecond: number;
  /** Requests the servers received per second over the window (see `roundTripsCounted`). */
  readonly serverRequestsPerSec: number;
  /** `serverRequestsPerSec` × renewal interval (TTL / 3) / locks held: about 1 (× masters) when every lock is renewed by its own request. */
  readonly requestsPerLockPerRenewal: number;
  /** What the server requests counted. */
  readonly roundTripsCounted: string;
  /** The provider's automatic `extended` events per second (client side; session providers emit one per lock per session renewal). */
  readonly extendedEventsPerSec: number;
  /** (heap with the locks held − heap before) / locks held, bytes. */
  readonly heapPerLockBytes: number;
  /** Raw counter deltas over the window (non-zero ones). */
  readonly counters: Readonly<Record<string, number>>;
}

/** The default bound of the acquire phase, ms (see {@link HeldLocksOptions.acquireMs}). */
export const DEFAULT_ACQUIRE_PHASE_MS = 90_000;
/** The default bound of the release phase, ms. */
export const DEFAULT_RELEASE_PHASE_MS = 30_000;

/** What a server request is on each backend. */
export const ROUND_TRIP_DEFINITIONS: Readonly<Record<Backend, string>> = {
  redis: 'EVAL + EVALSHA calls (INFO commandstats; every lock operation of the adapter is one script call, and commands run inside a script are not requests)',
  redlock: 'EVAL + EVALSHA + SET calls summed over the masters (INFO commandstats)',
  zookeeper: 'client packets received, summed over the members (mntr zk_packets_received)',
  etcd: 'gRPC messages received, every method, summed over the members (grpc_server_msg_received_total: unary calls and stream messages such as LeaseKeepAlive)',
  memory: 'calls on the in-process store (requests, extends, releases)',
  postgres: 'not counted (no PostgreSQL server counters yet)',
};

/** The counters worth keeping in the JSON (the rest of mntr and /metrics is gauges and histograms). */
export const KEPT_COUNTERS = /^(cmdstat_\w+|zk_packets_(received|sent)|zk_sum_node_\w+_watch_count|etcd_debugging_mvcc_events_total|grpc_server_msg_received_total\{.*|memory_store_\w+)$/;

/** Server requests over the window from the counter deltas. */
export function serverRequests(backend: Backend, delta: CounterDelta): number {
  switch (backend) {
    case 'redis':
      return sumMatching(delta, /^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/);
    case 'redlock':
      // Redlock acquires with a plain SET (none happen in the window) and extends with a script.
      return sumMatching(delta, /^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro|set)$/);
    case 'zookeeper':
      return delta['zk_packets_received'] ?? 0;
    case 'etcd':
      return sumMatching(delta, /^grpc_server_msg_received_total\{/);
    case 'memory':
      return sumMatching(delta, /^memory_store_(requests|extends|releases)$/);
    case 'postgres':
      return Number.NaN;
  }
}

/** Runs `work` over `count` items with at most `concurrency` at once, stopping at `deadline` (monotonic ms). */
async function forEachBounded(count: number, concurrency: number, deadline: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count && performance.now() < deadline) {
        const index = next;
        next += 1;
        await work(index);
      }
    }),
  );
}

/** Measures `subject` holding many locks with auto-extension; `probe` reads its servers' counters. */
export async function runHeldLocks(subject: Subject, probe: CounterProbe, options: HeldLocksOptions): Promise<HeldLocksResult> {
  if (subject.openProvider === undefined) throw new Error(`${subject.id} has no provider to hold locks with`);
  const lockCount = options.locks ?? 10_000;
  const ttlMs = options.ttlMs ?? 3_000;
  const concurrency = options.concurrency ?? 64;
  const provider: LockProvider = await subject.openProvider(ttlMs);
  const perLock = provider.capabilities.expiry === 'per-lock';
  let lost = 0;
  let extended = 0;
  const lostReasons: Record<string, number> = {};
  const acquireFailures: Record<string, number> = {};
  const tally = (into: Record<string, number>, name: string): void => {
    into[name] = (into[name] ?? 0) + 1;
  };
  const unsubscribe = [
    provider.on('lost', (event) => {
      lost += 1;
      tally(lostReasons, String(event.error.reason ?? event.error.code));
    }),
    provider.on('extended', (event) => {
      if (event.automatic) extended += 1;
    }),
  ];
  const handles: LockHandle[] = [];
  try {
    const run = `held:${randomUUID()}`;
    await (await provider.acquire(`${run}:warm`, { waitMs: 10_000, ...(perLock ? { ttlMs } : {}) })).release();
    fullGc();
    const heapBefore = process.memoryUsage().heapUsed;
    const acquireStarted = performance.now();
    await forEachBounded(lockCount, concurrency, acquireStarted + (options.acquireMs ?? DEFAULT_ACQUIRE_PHASE_MS), async (index) => {
      // autoExtend is the default (true) for per-lock providers; session providers renew their session.
      try {
        handles.push(await provider.acquire(`${run}:${index}`, { waitMs: 10_000, ...(perLock ? { ttlMs } : {}) }));
      } catch (error) {
        tally(acquireFailures, String((error as { code?: unknown }).code ?? (error as Error).name));
      }
    });
    const acquireSeconds = (performance.now() - acquireStarted) / 1000;
    fullGc();
    const heapAfter = process.memoryUsage().heapUsed;
    // One renewal interval first, so that renewals are in their steady state when the window opens.
    await new Promise((resolve) => setTimeout(resolve, ttlMs / 3));
    const locksHeld = handles.filter((handle) => handle.isHeld()).length;
    const countersBefore = await probe.read();
    const extendedBefore = extended;
    const cpuBefore = process.cpuUsage();
    const windowStarted = performance.now();
    await new Promise((resolve) => setTimeout(resolve, options.windowMs));
    const cpu = process.cpuUsage(cpuBefore);
    const windowSeconds = (performance.now() - windowStarted) / 1000;
    const extendedInWindow = extended - extendedBefore;
    const countersAfter = await probe.read();
    const locksHeldAtEnd = handles.filter((handle) => handle.isHeld()).length;
    const delta = counterDelta(countersBefore, countersAfter);
    const requestsPerSec = serverRequests(subject.backend, delta) / windowSeconds;
    return {
      ...subjectFields(subject),
      ttlMs,
      expiry: perLock ? 'per-lock' : 'session',
      locksRequested: lockCount,
      locksHeld,
      locksLost: lost,
      lostReasons,
      acquireFailures,
      locksHeldAtEnd,
      acquireSeconds: round(acquireSeconds, 2),
      windowSeconds: round(windowSeconds, 2),
      // Not rounded: a short quiet window (the smoke run's) uses well under a thousandth of a second per second.
      cpuSecondsPerSecond: (cpu.user + cpu.system) / 1e6 / windowSeconds,
      serverRequestsPerSec: round(requestsPerSec, 1),
      requestsPerLockPerRenewal: locksHeld > 0 ? round((requestsPerSec * (ttlMs / 3 / 1000)) / locksHeld, 4) : 0,
      roundTripsCounted: ROUND_TRIP_DEFINITIONS[subject.backend],
      extendedEventsPerSec: round(extendedInWindow / windowSeconds, 1),
      heapPerLockBytes: handles.length > 0 ? round((heapAfter - heapBefore) / handles.length, 0) : 0,
      counters: Object.fromEntries(Object.entries(delta).filter(([name, value]) => value !== 0 && KEPT_COUNTERS.test(name))),
    };
  } finally {
    for (const stop of unsubscribe) stop();
    await forEachBounded(handles.length, concurrency, performance.now() + (options.releaseMs ?? DEFAULT_RELEASE_PHASE_MS), async (index) => {
      await handles[index]?.release().catch(() => false);
    });
    await provider.close();
  }
}
