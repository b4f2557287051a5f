/**
 * Scenario 3b, many waiters: one client holds a key while W (default 100) acquires of the same key
 * wait in the same process → heap per waiter (full GC before and after queueing); then the holder
 * releases, every waiter takes and releases the lock in turn → drain rate and, counted on the
 * server, wake-ups per release (see {@link wakeupsFromCounters}). Bounded by waitMs per waiter and
 * by the enqueue wait.
 */
import { randomUUID } from 'node:crypto';
import { fullGc } from './memory.js';
import { counterDelta, sumMatching, type CounterDelta, type CounterProbe } from './server-counters.js';
import { round } from './stats.js';
import { subjectFields, type Backend, type Subject, type SubjectFields } from './subjects.js';

/** Bounds of one waiters measurement. */
export interface WaitersOptions {
  /** Concurrent waiters (default 100). */
  readonly waiters?: number;
  /** How long each waiter may wait, ms. */
  readonly waitMs: number;
  /**
   * Extra time after every waiter reported waiting (or, for subjects that cannot report it, after
   * they were started) before the heap and the counters are read, ms (default 500).
   */
  readonly settleMs?: number;
  /** Longest wait for every waiter to report waiting, ms (default 10_000). */
  readonly enqueueMs?: number;
  /** How many Redlock masters the probe sums over (default 5). */
  readonly redlockMasters?: number;
}

/** One subject's waiters figures. */
export interface WaitersResult extends SubjectFields {
  readonly waiters: number;
  /** Waiters that got the lock before their wait ran out. */
  readonly granted: number;
  /** (heap with the waiters queued − heap before) / waiters, bytes. */
  readonly heapPerWaiterBytes: number;
  /** Grants per second while the queue drains (each waiter releases at once). */
  readonly drainPerSec: number;
  /**
   * Server-side wake-ups during the drain divided by the releases that had a waiter (= grants):
   * 1 is the ideal (only the next waiter is woken); N means every waiter wakes on every release.
   * Absent when the subject has no counter definition or no probe was given.
   */
  readonly wakeupsPerRelease?: number;
  /** What the wake-ups counted, for the docs. */
  readonly wakeupsCounted?: string;
  /** The raw counter deltas over the drain that the wake-ups came from. */
  readonly counters?: Readonly<Record<string, number>>;
}

/** What one wake-up is on each backend's server, and how it is computed from the counter deltas. */
export const WAKEUP_DEFINITIONS: Readonly<Record<Backend, string>> = {
  redis: 'acquire-script runs (EVALSHA + EVAL calls in INFO commandstats, minus the release-script calls)',
  redlock: 'acquire rounds ((EVALSHA + EVAL calls in INFO commandstats summed over the masters, divided by the masters) − 1, halved: every round is one acquire-script call per master, undone by one release-script call per master, and the holder\'s first release has no round)',
  zookeeper: "watches fired (mntr: sum of zk_sum_node_{deleted,children,changed,created}_watch_count over the members; includes a releasing holder hearing its own delete, from the watch each holder keeps, and the one notification of the children watch an acquisition's first listing leaves on the lock znode when its process held no lock there)",
  etcd: 'watch events sent (etcd_debugging_mvcc_events_total summed over the members)',
  memory: 'grants to queued waiters plus acquire attempts (calls on the store)',
  postgres: 'not counted (no PostgreSQL server counters yet)',
};

/**
 * Wake-ups over the drain from the counter deltas, for fencelock subjects (whose protocol is known:
 * `releases` is the number of releases in the window, every one a single release-script call on Redis).
 */
export function wakeupsFromCounters(backend: Backend, delta: CounterDelta, releases: number, redlockMasters: number): number {
  switch (backend) {
    case 'redis':
      return sumMatching(delta, /^cmdstat_(eval|evalsha)$/) - releases;
    case 'redlock':
      // Every round is an acquire-script call on each master, and one release-script call on each
      // master undoes it (at once when it failed, at the release when it won); the holder's release
      // that opens the drain has no round in the window.
      return (sumMatching(delta, /^cmdstat_(eval|evalsha)$/) / redlockMasters - 1) / 2;
    case 'zookeeper':
      return sumMatching(delta, /^zk_sum_node_(deleted|children|changed|created)_watch_count$/);
    case 'etcd':
      return delta['etcd_debugging_mvcc_events_total'] ?? 0;
    case 'memory':
      return (delta['memory_store_requests'] ?? 0) + (delta['memory_store_queued_grants'] ?? 0);
    case 'postgres':
      return Number.NaN;
  }
}

const KEPT_COUNTERS = /^(cmdstat_(eval|evalsha|set|publish)|zk_packets_received|zk_sum_node_\w+_watch_count|etcd_debugging_mvcc_events_total|grpc_server_msg_received_total\{.*grpc_method="(Range|Txn|Watch|DeleteRange)".*|memory_store_\w+)$/;

/** Measures `subject` with many waiters on one key; with a probe of its servers, counts wake-ups too. */
export async function runWaiters(subject: Subject, options: WaitersOptions, probe?: CounterProbe): Promise<WaitersResult> {
  const count = options.waiters ?? 100;
  const session = await subject.open();
  try {
    const key = `waiters:${randomUUID()}`;
    await (await session.lock(`${key}:warm`, options.waitMs))();
    const release = await session.lock(key, options.waitMs);
    fullGc();
    const before = process.memoryUsage().heapUsed;
    let waiting = 0;
    let allWaiting: () => void = () => undefined;
    const enqueued = new Promise<void>((resolve) => {
      allWaiting = resolve;
    });
    const unsubscribe = session.onContended?.(() => {
      waiting += 1;
      if (waiting >= count) allWaiting();
    });
    let granted = 0;
    let lastGrant = 0;
    const pending = Array.from({ length: count }, async () => {
      try {
        const done = await session.lock(key, options.waitMs);
        granted += 1;
        lastGrant = performance.now();
        await done();
      } catch {
        // Timed out: counted by `granted`.
      }
    });
    // Every waiter must be queued (its set-up requests done) before the counters are read.
    if (unsubscribe !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([enqueued, new Promise((resolve) => (timer = setTimeout(resolve, options.enqueueMs ?? 10_000)))]);
      clearTimeout(timer);
    }
    await new Promise((resolve) => setTimeout(resolve, options.settleMs ?? 500));
    fullGc();
    const after = process.memoryUsage().heapUsed;
    const countersBefore = await probe?.read();
    const released = performance.now();
    await release();
    await Promise.all(pending);
    unsubscribe?.();
    const seconds = (lastGrant - released) / 1000;
    const countersAfter = countersBefore === undefined ? undefined : await probe?.read();
    let wakeups: Pick<WaitersResult, 'wakeupsPerRelease' | 'wakeupsCounted' | 'counters'> = {};
    if (countersBefore !== undefined && countersAfter !== undefined) {
      const delta = counterDelta(countersBefore, countersAfter);
      const kept = Object.fromEntries(Object.entries(delta).filter(([name, value]) => KEPT_COUNTERS.test(name) && value !== 0));
      wakeups = { counters: kept };
      if (subject.kind === 'fencelock' && granted > 0) {
        // Releases in the window: the holder's and every waiter's (the last one has nobody to wake).
        const total = wakeupsFromCounters(subject.backend, delta, 1 + granted, options.redlockMasters ?? 5);
        wakeups = { ...wakeups, wakeupsPerRelease: round(total / granted, 2), wakeupsCounted: WAKEUP_DEFINITIONS[subject.backend] };
      }
    }
    return {
      ...subjectFields(subject),
      waiters: count,
      granted,
      heapPerWaiterBytes: round((after - before) / count, 0),
      drainPerSec: granted > 0 && seconds > 0 ? round(granted / seconds, 1) : 0,
      ...wakeups,
    };
  } finally {
    await session.close();
  }
}
