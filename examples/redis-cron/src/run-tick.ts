import { isLockError, monotonicNow, type LockHandle, type LockProvider } from '@fencelock/core';
import { buildNightlyReport } from './nightly-report.js';
import type { LockMode, TickReport } from './protocol.js';
import type { ReportStore } from './report-store.js';

/** What a worker needs to run a tick. */
export interface TickContext {
  /** The worker's name, recorded with what it publishes. */
  readonly worker: string;
  /** This worker's own lock provider (its own connections). */
  readonly locks: LockProvider;
  /** Where reports and done markers live. */
  readonly store: ReportStore;
  /** Prefix of the lock key, so runs never share locks. */
  readonly namespace: string;
  /** The lock's TTL, in ms. */
  readonly ttlMs: number;
  /** How long the job takes, in ms. */
  readonly jobMs: number;
}

/**
 * One worker's handling of one cron tick: build the nightly report of `date` unless another worker
 * does, or did. The lock key comes from the tick (`report:<date>`), so every tick is its own lock.
 */
export async function runTick(context: TickContext, date: string, mode: LockMode): Promise<TickReport> {
  const { worker, locks, store } = context;
  const base = { worker, date, mode };

  // Cheap check first: a late worker (its clock behind, or restarted) finds the report done.
  const doneEarlier = await store.doneBy(date);
  if (doneEarlier !== undefined) return { ...base, outcome: 'done-already', doneBy: doneEarlier, tookLock: false };

  const key = `${context.namespace}:report:${date}`;
  const started = monotonicNow();
  // tryAcquire: one attempt; contention is a value (`undefined`), so the losers skip at once.
  // acquire: the losers wait for the lock, and only the done marker stops them running the job again.
  const lock: LockHandle | undefined =
    mode === 'try'
      ? await locks.tryAcquire(key, { ttlMs: context.ttlMs })
      : await locks.acquire(key, { ttlMs: context.ttlMs, waitMs: context.jobMs * 4 + 10_000 });
  const waitedMs = Math.round(monotonicNow() - started);
  if (lock === undefined) return { ...base, outcome: 'busy', waitedMs };

  let extensions = 0;
  const stopCounting = locks.on('extended', (event) => {
    if (event.ownerId === lock.ownerId) extensions += 1;
  });
  try {
    // Checked again under the lock: the holder we waited for (or raced) may have finished just now.
    const doneBy = await store.doneBy(date);
    if (doneBy !== undefined) return { ...base, outcome: 'done-already', doneBy, tookLock: true, waitedMs };

    // The job runs longer than the TTL: the lock is extended automatically (every third of the TTL),
    // and `lock.signal` stops the job if the lock is lost anyway.
    const { orders } = await buildNightlyReport(date, context.jobMs, lock.signal);
    lock.assertHeld();
    const fencingToken = String(lock.fencingToken);
    await store.publish({ date, worker, fencingToken, orders });
    return { ...base, outcome: 'ran', fencingToken, extensions, waitedMs };
  } catch (error) {
    // The lock was lost mid-job (extensions failed until its validity ran out): nothing was
    // published, and whoever holds the lock now may build the report.
    if (lock.signal.aborted && isLockError(lock.signal.reason, 'LOCK_LOST')) return { ...base, outcome: 'lost', extensions, waitedMs };
    throw error;
  } finally {
    stopCounting();
    await lock.release();
  }
}
