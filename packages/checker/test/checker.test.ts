import { describe, expect, it } from 'vitest';
import { type FencedWriteRecord, type HistoryEvent, type PropertyId, checkHistory } from '../src/index.js';
import { HistoryBuilder, ms } from './support/history-builder.js';

const properties = (result: ReturnType<typeof checkHistory>): PropertyId[] => [...new Set(result.violations.map((v) => v.property))];
const storeWrite = (atMs: number, key: string, token: bigint, proc: string, accepted: boolean): FencedWriteRecord => ({
  t: ms(atMs),
  key,
  token,
  proc,
  accepted,
});

describe('S1: overlapping validity windows', () => {
  it('accepts holds that follow each other', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.release('p1', 'k', 'a', 10, 11);
    h.acquire('p2', 'k', 'b', 2n, 5, 12, 1012);
    h.release('p2', 'k', 'b', 20, 21);
    const result = checkHistory(h.events);
    expect(result.violations).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.stats.acquisitions).toBe(2);
  });

  it('flags a second holder granted before the first released, and names both', () => {
    const h = new HistoryBuilder();
    const first = h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    const second = h.acquire('p2', 'k', 'b', 2n, 5, 12, 1012);
    h.release('p1', 'k', 'a', 30, 31);
    const result = checkHistory(h.events);
    expect(properties(result)).toEqual(['S1']);
    expect(result.violations[0]?.events).toEqual(expect.arrayContaining([first, second]));
    expect(result.violations[0]?.key).toBe('k');
  });

  it('cites fault windows in other properties too', () => {
    const h = new HistoryBuilder();
    const kill = h.nemesis('kill', 15, 'redis-1').seq;
    h.acquire('p1', 'k', 'a', 5n, 0, 1, 1000);
    h.release('p1', 'k', 'a', 10, 11);
    h.nemesis('restart', 500, 'redis-1');
    h.acquire('p2', 'k', 'b', 1n, 20, 21, 1000);
    const result = checkHistory(h.events);
    expect(properties(result)).toEqual(['S4']);
    expect(result.violations[0]?.nemesis).toEqual([kill]);
  });

  it('ends a hold without deadline (a session lock) only at release, loss, or the kill of its process', () => {
    const open = new HistoryBuilder();
    open.acquire('p1', 'k', 'a', 1n, 0, 1, null);
    open.acquire('p2', 'k', 'b', 2n, 5, 3000, null);
    expect(properties(checkHistory(open.events))).toEqual(['S1']);

    const killed = new HistoryBuilder();
    killed.acquire('p1', 'k', 'a', 1n, 0, 1, null);
    killed.nemesis('kill', 100, 'p1');
    killed.acquire('p2', 'k', 'b', 2n, 5, 3000, null);
    expect(checkHistory(killed.events).ok).toBe(true);
  });

  it('ends a hold at its lost signal', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.lost('p1', 'k', 'a', 50, 'taken-over');
    h.acquire('p2', 'k', 'b', 2n, 5, 60, 1060);
    expect(checkHistory(h.events).ok).toBe(true);
  });

  it('ends a hold at its validity deadline, with slack, and flags a grant well inside it', () => {
    const within = new HistoryBuilder();
    within.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    within.acquire('p2', 'k', 'b', 2n, 5, 99, 1000);
    expect(checkHistory(within.events).ok).toBe(true);

    const inside = new HistoryBuilder();
    inside.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    inside.acquire('p2', 'k', 'b', 2n, 5, 50, 1000);
    expect(properties(checkHistory(inside.events))).toEqual(['S1']);
  });

  it('uses an extension to move the deadline, so a grant before the new deadline overlaps', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.extend('p1', 'k', 'a', 50, 51, 150);
    h.acquire('p2', 'k', 'b', 2n, 5, 120, 1000);
    expect(properties(checkHistory(h.events))).toEqual(['S1']);
  });

  it('keeps keys apart and cites the nemesis steps active at the time', () => {
    const h = new HistoryBuilder();
    const start = h.nemesis('start-partition', 0).seq;
    h.acquire('p1', 'k1', 'a', 1n, 0, 1, 1000);
    h.acquire('p2', 'k2', 'b', 1n, 0, 1, 1000);
    h.acquire('p3', 'k1', 'c', 2n, 2, 3, 1000);
    const stop = h.nemesis('stop-partition', 500).seq;
    const result = checkHistory(h.events);
    expect(result.violations.filter((v) => v.property === 'S1').map((v) => v.key)).toEqual(['k1']);
    expect(result.violations[0]?.nemesis).toEqual([start, stop]);
  });
});

describe('indeterminate (info) acquires', () => {
  it('does not flag an info acquire followed by another holder', () => {
    const h = new HistoryBuilder();
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'info', atMs: 100, err: 'LOCK_TIMEOUT' });
    h.acquire('p2', 'k', 'b', 2n, 5, 10, 1000);
    h.release('p2', 'k', 'b', 20, 21);
    // An acquire that never completed (its process was killed) is indeterminate too.
    h.event({ proc: 'p3', key: 'k', f: 'acquire', type: 'invoke', atMs: 30 });
    h.acquire('p4', 'k', 'd', 4n, 31, 32, 1000);
    const result = checkHistory(h.events);
    expect(result.violations).toEqual([]);
    expect(result.stats.acquireIndeterminate).toBe(2);
  });

  it('accepts at the store the token an info acquire reported, and writes through a later holder', () => {
    const h = new HistoryBuilder();
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'info', atMs: 100, token: 7n, err: 'LOCK_TIMEOUT' });
    h.acquire('p2', 'k', 'b', 8n, 150, 160, 1000);
    const writes = [storeWrite(101, 'k', 7n, 'p1', true), storeWrite(170, 'k', 8n, 'p2', true), storeWrite(180, 'k', 7n, 'p1', false)];
    const result = checkHistory(h.events, { fencedWrites: writes });
    expect(result.violations).toEqual([]);
    expect(result.stats.fenceRejections).toBe(1);
  });

  it('does not pair a killed process\'s open acquire with its successor\'s completion', () => {
    const h = new HistoryBuilder();
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    h.nemesis('kill', 10, 'p1');
    h.acquire('p1', 'k', 'a', 1n, 500, 502, 1500);
    const result = checkHistory(h.events);
    expect(result.ok).toBe(true);
    expect(result.stats.acquireIndeterminate).toBe(1);
    expect(result.stats.acquireLatencyMs?.max).toBe(2);
  });

  it('does not let an info acquire drag token order: a lower token later is fine', () => {
    const h = new HistoryBuilder();
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'info', atMs: 10, token: 9n });
    h.acquire('p2', 'k', 'b', 3n, 20, 21, 1000);
    expect(checkHistory(h.events).ok).toBe(true);
  });
});

describe('S2 and S4: tokens', () => {
  it('flags a token that goes down after a hold ended (S4), also after a loss', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 5n, 0, 1, 1000);
    h.lost('p1', 'k', 'a', 10, 'session-lost');
    h.acquire('p1', 'k', 'a2', 4n, 20, 21, 1000);
    const result = checkHistory(h.events);
    expect(properties(result)).toEqual(['S4']);
  });

  it('flags a token granted twice (S4)', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 5n, 0, 1, 1000);
    h.release('p1', 'k', 'a', 10, 11);
    h.acquire('p2', 'k', 'b', 5n, 20, 21, 1000);
    expect(properties(checkHistory(h.events))).toEqual(['S4']);
  });

  it('flags a waiter granted a lower token than the hold before it (S2)', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 5n, 0, 1, 1000);
    h.event({ proc: 'p2', key: 'k', f: 'acquire', type: 'invoke', atMs: 5 });
    h.release('p1', 'k', 'a', 10, 11);
    h.event({ proc: 'p2', key: 'k', f: 'acquire', type: 'ok', atMs: 12, token: 3n, lockId: 'b', validUntilMs: 1012 });
    expect(properties(checkHistory(h.events))).toEqual(['S2']);
  });

  it('does not count a later hold, shorter than the slack, as ended before a grant it followed (S2)', () => {
    // A chaos history: p3's grant (token 3) and release come first; p1, waiting since before p3's
    // grant, gets token 4 just after and releases 0.05 ms later, within the 2 ms slack of p3's grant.
    const h = new HistoryBuilder();
    h.event({ proc: 'p3', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 1.5 });
    h.event({ proc: 'p3', key: 'k', f: 'acquire', type: 'ok', atMs: 2.44, token: 3n, lockId: 'c', validUntilMs: 2000 });
    h.release('p3', 'k', 'c', 2.49, 3.7);
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'ok', atMs: 4.02, token: 4n, lockId: 'd', validUntilMs: 2000 });
    h.release('p1', 'k', 'd', 4.07, 4.9);
    expect(checkHistory(h.events).violations).toEqual([]);
  });

  it('skips token checks for holds without tokens (fencing none)', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', null, 0, 1, 1000);
    h.release('p1', 'k', 'a', 10, 11);
    h.acquire('p2', 'k', 'b', null, 20, 21, 1000);
    expect(checkHistory(h.events).ok).toBe(true);
  });
});

describe('S3: fencing at the resource', () => {
  it('flags a foreign token and a stale write the store accepted', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.release('p1', 'k', 'a', 10, 11);
    h.acquire('p2', 'k', 'b', 2n, 12, 13, 1000);
    const foreign = checkHistory(h.events, { fencedWrites: [storeWrite(5, 'k', 99n, 'p9', true)] });
    expect(properties(foreign)).toEqual(['S3']);
    expect(foreign.violations[0]?.writes).toEqual([0]);
    // A token of another key is foreign too.
    const otherKey = checkHistory(h.events, { fencedWrites: [storeWrite(5, 'other', 1n, 'p1', true)] });
    expect(properties(otherKey)).toEqual(['S3']);

    const stale = checkHistory(h.events, { fencedWrites: [storeWrite(14, 'k', 2n, 'p2', true), storeWrite(15, 'k', 1n, 'p1', true)] });
    expect(properties(stale)).toEqual(['S3']);
    expect(stale.violations[0]?.writes).toEqual([0, 1]);
  });
});

describe('S3: set-full on the final read', () => {
  it('flags an acknowledged value missing from the final read', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    const writes = [
      { ...storeWrite(2, 'k', 1n, 'p1', true), value: 'p1:0' },
      { ...storeWrite(3, 'k', 1n, 'p1', true), value: 'p1:1' },
    ];
    expect(checkHistory(h.events, { fencedWrites: writes, finalReads: { k: ['p1:0', 'p1:1'] } }).ok).toBe(true);
    const result = checkHistory(h.events, { fencedWrites: writes, finalReads: { k: ['p1:0'] } });
    expect(properties(result)).toEqual(['S3']);
    expect(result.violations[0]?.writes).toEqual([1]);
  });
});

describe('S5: no write through the library after loss', () => {
  it('flags a write invoked after the loss signal that succeeded', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.lost('p1', 'k', 'a', 10, 'taken-over');
    h.write('p1', 'k', 'a', 1n, 20, 21);
    expect(properties(checkHistory(h.events))).toEqual(['S5']);
  });

  it('allows a write in flight when the loss came, and a refused write after it', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.event({ proc: 'p1', key: 'k', f: 'write', type: 'invoke', atMs: 5, lockId: 'a', token: 1n });
    h.lost('p1', 'k', 'a', 10, 'taken-over');
    h.event({ proc: 'p1', key: 'k', f: 'write', type: 'ok', atMs: 12, lockId: 'a', token: 1n });
    h.write('p1', 'k', 'a', 1n, 20, 21, 'fail');
    expect(checkHistory(h.events).ok).toBe(true);
  });

  it('flags a write after the validity deadline', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.write('p1', 'k', 'a', 1n, 110, 111);
    h.lost('p1', 'k', 'a', 120);
    expect(properties(checkHistory(h.events))).toEqual(['S5']);
  });
});

describe('S6: no resurrection', () => {
  it('flags an extend that succeeded after loss', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.lost('p1', 'k', 'a', 50, 'taken-over');
    h.extend('p1', 'k', 'a', 60, 61, 1060);
    expect(properties(checkHistory(h.events))).toEqual(['S6']);
  });

  it('flags an extend invoked after validity ended, and does not let it stretch the window', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.extend('p1', 'k', 'a', 110, 111, 1110);
    h.acquire('p2', 'k', 'b', 2n, 101, 105, 1105);
    const result = checkHistory(h.events, { lossSignalBoundMs: 1_000 });
    expect(properties(result)).toEqual(['S6']);
  });

  it('flags a release that returned "held" after loss, not one that returned false', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.lost('p1', 'k', 'a', 50, 'taken-over');
    h.release('p1', 'k', 'a', 60, 61, 'fail');
    expect(checkHistory(h.events).ok).toBe(true);

    const bad = new HistoryBuilder();
    bad.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    bad.lost('p1', 'k', 'a', 50, 'taken-over');
    bad.release('p1', 'k', 'a', 60, 61, 'ok');
    expect(properties(checkHistory(bad.events))).toEqual(['S6']);
  });

  it('flags a release after expiry that succeeded while another holder held the key', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.acquire('p2', 'k', 'b', 2n, 50, 101, 1101);
    h.release('p1', 'k', 'a', 120, 121, 'ok');
    const result = checkHistory(h.events, { lossSignalBoundMs: 1_000 });
    expect(properties(result)).toEqual(['S6']);
  });
});

describe('L1: loss-signal latency', () => {
  it('flags a loss signalled long after validity ended, and reports the max latency', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.lost('p1', 'k', 'a', 180, 'expired');
    const result = checkHistory(h.events);
    expect(properties(result)).toEqual(['L1']);
    expect(result.stats.maxLossSignalLatencyMs).toBeCloseTo(80, 6);
    expect(result.stats.lostByReason).toEqual({ expired: 1 });
  });

  it('measures from the resume of a paused holder', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.nemesis('start-pause', 50, 'p1');
    h.nemesis('stop-pause', 300, 'p1');
    h.lost('p1', 'k', 'a', 310, 'expired');
    const result = checkHistory(h.events);
    expect(result.ok).toBe(true);
    expect(result.stats.maxLossSignalLatencyMs).toBeCloseTo(10, 6);
  });

  it('flags a missing loss signal while the holder kept running, but not after a kill', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.acquire('p1', 'other', 'x', 1n, 400, 401, 1000);
    expect(properties(checkHistory(h.events))).toEqual(['L1']);

    const killed = new HistoryBuilder();
    killed.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    killed.nemesis('kill', 50, 'p1');
    killed.acquire('p1', 'other', 'x', 1n, 400, 401, 1000);
    expect(checkHistory(killed.events).ok).toBe(true);
  });
});

describe('L2: failover after a holder is killed', () => {
  const history = (grantMs: number): HistoryEvent[] => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.event({ proc: 'p2', key: 'k', f: 'acquire', type: 'invoke', atMs: 50 });
    h.nemesis('kill', 100, 'p1');
    h.event({ proc: 'p2', key: 'k', f: 'acquire', type: 'ok', atMs: grantMs, token: 2n, lockId: 'b', validUntilMs: grantMs + 1000 });
    return h.events;
  };

  it('flags a waiter granted the key too long after the kill, and reports the gap', () => {
    const late = checkHistory(history(2200), { failoverBoundMs: 1500 });
    expect(properties(late)).toEqual(['L2']);
    expect(late.stats.maxHandoverGapMs).toBeCloseTo(2100, 6);
    const inTime = checkHistory(history(1200), { failoverBoundMs: 1500 });
    expect(inTime.ok).toBe(true);
    expect(inTime.stats.maxHandoverGapMs).toBeCloseTo(1100, 6);
    // Without a bound, L2 is not checked.
    expect(checkHistory(history(2200)).ok).toBe(true);
  });
});

describe('L3, statistics and options', () => {
  it('reports leftover keys as L3', () => {
    const result = checkHistory([], { leftoverKeys: ['locks/a'], run: 'r' });
    expect(result.violations).toEqual([{ property: 'L3', run: 'r', key: 'locks/a', events: [], message: expect.any(String) }]);
  });

  it('counts operations and acquire latency percentiles', () => {
    const h = new HistoryBuilder();
    for (let i = 0; i < 10; i += 1) {
      h.acquire('p1', 'k', `a${i}`, BigInt(i + 1), i * 100, i * 100 + i + 1, i * 100 + 1000);
      h.release('p1', 'k', `a${i}`, i * 100 + 50, i * 100 + 51);
    }
    // An automatic renewal has no invocation and still counts as an operation.
    h.event({ proc: 'p1', key: 'k', f: 'extend', type: 'ok', atMs: 920, lockId: 'a9', validUntilMs: 1920 });
    const { stats } = checkHistory(h.events);
    expect(stats.operations).toBe(21);
    expect(stats.acquireLatencyMs).toEqual({ count: 10, p50: 5, p90: 9, p99: 10, max: 10 });
  });

  it('refuses a history of several runs and bad options', () => {
    const a = new HistoryBuilder('a');
    a.acquire('p1', 'k', 'x', 1n, 0, 1, 100);
    const b = new HistoryBuilder('b');
    b.acquire('p1', 'k', 'y', 2n, 0, 1, 100);
    expect(() => checkHistory([...a.events, ...b.events])).toThrow(RangeError);
    expect(() => checkHistory(a.events, { slackMs: Number.NaN })).toThrow(RangeError);
  });

  it('maps validUntil with the offset clock for faked client clocks', () => {
    const h = new HistoryBuilder();
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
    h.acquire('p2', 'k', 'b', 2n, 5, 150, 1000);
    // The client's clock runs 100 ms behind the parent's: its deadline 100 is 200 on the t axis.
    const events = h.events.map((event) => (event.proc === 'p1' && event.tc !== null ? { ...event, tc: event.tc - 100e6 } : event));
    expect(checkHistory(events).ok).toBe(true);
    expect(properties(checkHistory(events, { clock: 'offset' }))).toEqual(['S1']);
  });
});
