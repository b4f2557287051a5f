import { MemoryLockProvider, type LockProvider } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { type ClientEvent, type HistoryEvent, type HistoryEventInput, checkHistory, isNemesisEvent, createLockRecorder, parseEvent, serializeEvent } from '../src/index.js';
import { HistoryBuilder } from './support/history-builder.js';

const LIMIT_2 = { limit: 2, permits: 1 };

function propertiesOf(events: readonly HistoryEvent[]): string[] {
  return checkHistory(events).violations.map((violation) => violation.property);
}

describe('S7: at most N holders of a semaphore', () => {
  it('accepts `limit` overlapping holders, and a lock on the same key beside them', () => {
    const h = new HistoryBuilder();
    h.acquirePermits('c1', 'pool', 'a', 1n, 0, 1, 500, LIMIT_2);
    h.acquirePermits('c2', 'pool', 'b', 2n, 2, 3, 500, LIMIT_2);
    // A lock of the same name is another namespace: no S1 with the semaphore holders, no S7 either.
    h.acquire('c3', 'pool', 'l', 3n, 4, 5, 500);
    h.release('c1', 'pool', 'a', 50, 51);
    h.acquirePermits('c3', 'pool', 'c', 4n, 52, 53, 500, LIMIT_2);
    h.release('c2', 'pool', 'b', 60, 61);
    h.release('c3', 'pool', 'c', 70, 71);
    h.release('c3', 'pool', 'l', 80, 81);
    const result = checkHistory(h.events);
    expect(result.violations).toEqual([]);
    expect(result.ok).toBe(true);
  });

  it('reports N+1 holders at once, citing the grant and the holders it joined', () => {
    const h = new HistoryBuilder();
    const first = h.acquirePermits('c1', 'pool', 'a', 1n, 0, 1, 500, LIMIT_2);
    const second = h.acquirePermits('c2', 'pool', 'b', 2n, 2, 3, 500, LIMIT_2);
    const third = h.acquirePermits('c3', 'pool', 'c', 3n, 4, 5, 500, LIMIT_2);
    const result = checkHistory(h.events);
    const violations = result.violations.filter((violation) => violation.property === 'S7');
    expect(violations).toHaveLength(1);
    expect(violations[0]?.events).toEqual(expect.arrayContaining([first, second, third]));
    expect(violations[0]?.message).toContain('3 permits of semaphore "pool" (limit 2)');
    // Several holders of a semaphore are no S1 overlap: that is the point of a semaphore.
    expect(propertiesOf(h.events)).not.toContain('S1');
  });

  it('counts permits, not holders: two holds of 2 permits with limit 3 break it', () => {
    const h = new HistoryBuilder();
    h.acquirePermits('c1', 'pool', 'a', 1n, 0, 1, 500, { limit: 3, permits: 2 });
    h.acquirePermits('c2', 'pool', 'b', 2n, 2, 3, 500, { limit: 3, permits: 2 });
    expect(propertiesOf(h.events)).toEqual(['S7']);
  });

  it('reports overlapping holders that disagree on the limit', () => {
    const h = new HistoryBuilder();
    h.acquirePermits('c1', 'pool', 'a', 1n, 0, 1, 500, { limit: 2, permits: 1 });
    h.acquirePermits('c2', 'pool', 'b', 2n, 2, 3, 500, { limit: 3, permits: 1 });
    const violations = checkHistory(h.events).violations;
    expect(violations.map((violation) => violation.property)).toEqual(['S7']);
    expect(violations[0]?.message).toContain('two limits on semaphore "pool"');
  });

  it('lets a permit pass on when the previous holder released, expired or was lost, and lets the limit change once empty', () => {
    const h = new HistoryBuilder();
    h.acquirePermits('c1', 'pool', 'a', 1n, 0, 1, 500, { limit: 1, permits: 1 });
    h.release('c1', 'pool', 'a', 10, 11);
    h.acquirePermits('c2', 'pool', 'b', 2n, 12, 13, 40, { limit: 1, permits: 1 });
    h.acquirePermits('c3', 'pool', 'c', 3n, 14, 45, 500, { limit: 1, permits: 1 });
    h.lost('c3', 'pool', 'c', 60);
    h.acquirePermits('c1', 'pool', 'd', 4n, 61, 62, 500, { limit: 5, permits: 5 });
    h.release('c1', 'pool', 'd', 70, 71);
    expect(checkHistory(h.events).violations).toEqual([]);
  });

  it('holds semaphore tokens to S4: a later grant after a hold ended must get a greater token', () => {
    const h = new HistoryBuilder();
    h.acquirePermits('c1', 'pool', 'a', 5n, 0, 1, 500, LIMIT_2);
    h.release('c1', 'pool', 'a', 10, 11);
    h.acquirePermits('c2', 'pool', 'b', 4n, 20, 21, 500, LIMIT_2);
    expect(propertiesOf(h.events)).toEqual(['S4']);
  });
});

describe('semaphore fields in the history format', () => {
  it('round-trips limit and permits, and refuses one without the other or a bad count', () => {
    const h = new HistoryBuilder();
    h.acquirePermits('c1', 'pool', 'a', 1n, 0, 1, 500, { limit: 4, permits: 3 });
    const ok = h.events[1]!;
    expect(parseEvent(serializeEvent(ok))).toEqual(ok);
    expect(parseEvent(serializeEvent(ok))).toMatchObject({ limit: 4, permits: 3 });
    const json = JSON.parse(serializeEvent(ok)) as Record<string, unknown>;
    expect(() => parseEvent(JSON.stringify({ ...json, permits: undefined }))).toThrow(/go together/);
    expect(() => parseEvent(JSON.stringify({ ...json, limit: 0 }))).toThrow(/positive integer/);
    expect(() => parseEvent(JSON.stringify({ ...json, permits: 1.5 }))).toThrow(/positive integer/);
    const lock = new HistoryBuilder();
    lock.acquire('c1', 'k', 'a', 1n, 0, 1, 500);
    expect(parseEvent(serializeEvent(lock.events[1]!))).not.toHaveProperty('limit');
  });
});

describe('a semaphore history recorded from MemoryLockProvider', () => {
  it('passes S7 under contention, and the recorder marks the refused limit as a determinate failure', async () => {
    const shared: LockProvider = new MemoryLockProvider();
    let seq = 0;
    const events: HistoryEvent[] = [];
    // The recorder's client clock is the axis here (one process): t = tc.
    const record = (event: HistoryEventInput): void => {
      events.push({ ...event, run: 'memory-semaphore', seq: seq++, t: event.tc ?? 0 } as HistoryEvent);
    };
    try {
      const work = async (proc: string): Promise<void> => {
        const recorder = createLockRecorder({ proc, sink: record });
        for (let round = 0; round < 10; round += 1) {
          const handle = await recorder.acquireSemaphore(shared, 'pool', { limit: 2, waitMs: 5_000 });
          expect(handle).toBeDefined();
          await new Promise((resolve) => setImmediate(resolve));
          expect(await recorder.release(handle!)).toBe(true);
        }
      };
      await Promise.all(['c1', 'c2', 'c3', 'c4'].map(work));
      const holder = await shared.acquireSemaphore('pool', { limit: 2 });
      const refused = await createLockRecorder({ proc: 'c5', sink: record }).acquireSemaphore(shared, 'pool', { limit: 3 });
      expect(refused).toBeUndefined();
      await holder.release();
    } finally {
      await shared.close();
    }
    const oks = events.filter((event): event is ClientEvent => !isNemesisEvent(event) && event.f === 'acquire' && event.type === 'ok');
    expect(oks).toHaveLength(40);
    expect(oks.every((event) => event.limit === 2 && event.permits === 1)).toBe(true);
    expect(events.at(-1)).toMatchObject({ f: 'acquire', type: 'fail', err: 'LOCK_LIMIT_MISMATCH', limit: 3, permits: 1 });
    const result = checkHistory(events);
    expect(result.violations).toEqual([]);
  });
});
