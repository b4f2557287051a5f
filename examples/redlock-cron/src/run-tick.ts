import { isLockError, monotonicNow, type LockHandle, type LockProvider } from '@fencelock/core';
import { buildNightlyReport } from './nightly-report.js';
import type { LockMode, TickReport } from './protocol.js';
import type { ReportFiles } from './report-files.js';

/** What a worker needs to run a tick. */
export interface TickContext {
  /** The worker's name, recorded with what it publishes. */
  readonly worker: string;
  /** This worker's own lock provider (its own connections). */
  readonly locks: LockProvider;
  /** The published reports: the idempotency record. */
  readonly reports: ReportFiles;
  /** Prefix of the lock key, so runs never share locks. */
  readonly namespace: string;
  /** The lock's TTL, in ms. */
  readonly ttlMs: number;
  /** How long the job takes, in ms. */
  readonly jobMs: number;
  /** Called between the last lock check and the write (the example pauses the process there). */
  readonly beforeWrite?: () => Promise<void> | void;
}

/**
 * One worker's handling of one cron tick: build the nightly report of `date` unless another worker
 * does, or did. The Redlock lock (`report:<date>`) makes it rare that two workers build the same
 * report — it saves work. What makes a second copy impossible is the idempotency record: Redlock
 * has no fencing token, so a worker that was paused past its lock's validity cannot be stopped by
 * anything but the resource it writes to.
 */
export async function runTick(context: TickContext, date: string, mode: LockMode): Promise<TickReport> {
  const { worker, locks, reports } = context;
  const base = { worker, date, mode };

  const earlier = await reports.read(date);
  if (earlier !== undefined) return { ...base, outcome: 'done-already', writtenBy: earlier.worker, tookLock: false };

  const key = `${context.namespace}:report:${date}`;
  const started = monotonicNow();
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
    const found = await reports.read(date);
    if (found !== undefined) return { ...base, outcome: 'done-already', writtenBy: found.worker, tookLock: true, waitedMs };

    const { orders } = await buildNightlyReport(date, context.jobMs, lock.signal);
    lock.assertHeld(); // the last check a lock can give…
    await context.beforeWrite?.(); // …and a pause can still come right after it.
    const heldAtWrite = lock.isHeld();
    const outcome = await reports.writeOnce({ date, worker, orders });
    if (outcome === 'written') return { ...base, outcome: 'ran', extensions, waitedMs, heldAtWrite };
    const winner = await reports.read(date);
    return { ...base, outcome: 'duplicate-refused', extensions, waitedMs, heldAtWrite, writtenBy: winner?.worker };
  } catch (error) {
    // The lock was lost while the job ran (a failed extension, or a pause noticed in time): give up
    // before writing; whoever holds the lock now may build the report.
    if (lock.signal.aborted && isLockError(lock.signal.reason, 'LOCK_LOST')) return { ...base, outcome: 'lost', extensions, waitedMs };
    throw error;
  } finally {
    stopCounting();
    await lock.release();
  }
}
