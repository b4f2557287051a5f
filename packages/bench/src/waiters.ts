/**
 * Scenario 3b, many waiters (first part): one client holds a key while W (default 100) acquires of
 * the same key wait in the same process → heap per waiter (full GC before and after queueing); then
 * the holder releases and every waiter takes and releases the lock in turn → drain rate. Wake-ups
 * per release (server-side) are not measured yet. Bounded by waitMs per waiter.
 */
import { randomUUID } from 'node:crypto';
import { fullGc } from './memory.js';
import { round } from './stats.js';
import type { Subject } from './subjects.js';

/** Bounds of one waiters measurement. */
export interface WaitersOptions {
  /** Concurrent waiters (default 100). */
  readonly waiters?: number;
  /** How long each waiter may wait, ms. */
  readonly waitMs: number;
  /** Time given to the waiters to enqueue before the heap reading, ms (default 500). */
  readonly settleMs?: number;
}

/** One subject's waiters figures. */
export interface WaitersResult {
  readonly subject: string;
  readonly backend: Subject['backend'];
  readonly kind: Subject['kind'];
  readonly label: string;
  readonly waiters: number;
  /** Waiters that got the lock before their wait ran out. */
  readonly granted: number;
  /** (heap with the waiters queued − heap before) / waiters, bytes. */
  readonly heapPerWaiterBytes: number;
  /** Grants per second while the queue drains (each waiter releases at once). */
  readonly drainPerSec: number;
}

/** Measures `subject` with many waiters on one key. */
export async function runWaiters(subject: Subject, options: WaitersOptions): Promise<WaitersResult> {
  const count = options.waiters ?? 100;
  const session = await subject.open();
  try {
    const key = `waiters:${randomUUID()}`;
    await (await session.lock(`${key}:warm`, options.waitMs))();
    const release = await session.lock(key, options.waitMs);
    fullGc();
    const before = process.memoryUsage().heapUsed;
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
    await new Promise((resolve) => setTimeout(resolve, options.settleMs ?? 500));
    fullGc();
    const after = process.memoryUsage().heapUsed;
    const released = performance.now();
    await release();
    await Promise.all(pending);
    const seconds = (lastGrant - released) / 1000;
    return {
      subject: subject.id,
      backend: subject.backend,
      kind: subject.kind,
      label: subject.label,
      waiters: count,
      granted,
      heapPerWaiterBytes: round((after - before) / count, 0),
      drainPerSec: granted > 0 && seconds > 0 ? round(granted / seconds, 1) : 0,
    };
  } finally {
    await session.close();
  }
}
