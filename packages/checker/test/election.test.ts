import { MemoryLockProvider, type LockProvider } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { type ClientEvent, type HistoryEvent, type HistoryEventInput, checkHistory, createLockRecorder, isNemesisEvent, parseEvent, serializeEvent } from '../src/index.js';
import { HistoryBuilder } from './support/history-builder.js';

function propertiesOf(events: readonly HistoryEvent[]): string[] {
  return checkHistory(events).violations.map((violation) => violation.property);
}

describe('S8: one leader per term, terms increasing, no two leaders at once', () => {
  it('accepts successive leaders with increasing terms, and a lock and a semaphore of the same name beside them', () => {
    const h = new HistoryBuilder();
    h.campaign('c1', 'scheduler', 'a', 10n, 0, 1, 500);
    // Another namespace each: no S1 with the leader, no S7, no S8.
    h.acquire('c2', 'scheduler', 'l', 11n, 2, 3, 500);
    h.acquirePermits('c3', 'scheduler', 's', 12n, 4, 5, 500, { limit: 1, permits: 1 });
    h.release('c1', 'scheduler', 'a', 50, 51);
    h.campaign('c2', 'scheduler', 'b', 14n, 20, 52, 500);
    h.release('c2', 'scheduler', 'b', 60, 61);
    // A leader whose validity ran out is followed by one with a greater term.
    h.campaign('c3', 'scheduler', 'c', 20n, 62, 63, 80);
    h.campaign('c1', 'scheduler', 'd', 21n, 64, 90, 500);
    h.release('c1', 'scheduler', 'd', 100, 101);
    h.release('c2', 'scheduler', 'l', 110, 111);
    h.release('c3', 'scheduler', 's', 120, 121);
    const result = checkHistory(h.events);
    expect(result.violations).toEqual([]);
    expect(result.ok).toBe(true);
  });

  it('reports two leaders at once, citing both elections, and no S1 (leaderships are not lock holds)', () => {
    const h = new HistoryBuilder();
    const first = h.campaign('c1', 'scheduler', 'a', 1n, 0, 1, 500);
    const second = h.campaign('c2', 'scheduler', 'b', 2n, 2, 3, 500);
    const violations = checkHistory(h.events).violations;
    expect(violations.map((violation) => violation.property)).toEqual(['S8']);
    expect(violations[0]?.events).toEqual(expect.arrayContaining([first, second]));
    expect(violations[0]?.message).toContain('two leaders of "scheduler" at once');
    expect(violations[0]?.message).toContain('value "c2"');
  });

  it('reports one term granted to two leaders, even one after the other', () => {
    const h = new HistoryBuilder();
    h.campaign('c1', 'scheduler', 'a', 7n, 0, 1, 500);
    h.release('c1', 'scheduler', 'a', 10, 11);
    h.campaign('c2', 'scheduler', 'b', 7n, 12, 13, 500);
    const violations = checkHistory(h.events).violations;
    expect(violations.map((violation) => violation.property)).toEqual(['S8', 'S8']);
    expect(violations.map((violation) => violation.message).join('\n')).toContain('two leaders of "scheduler" in term 7');
  });

  it('reports a term that goes backwards after a resignation, an expiry or a loss', () => {
    for (const end of ['release', 'expiry', 'lost'] as const) {
      const h = new HistoryBuilder();
      h.campaign('c1', 'scheduler', 'a', 9n, 0, 1, end === 'expiry' ? 20 : 500);
      if (end === 'release') h.release('c1', 'scheduler', 'a', 10, 11);
      if (end === 'lost') h.lost('c1', 'scheduler', 'a', 10, 'taken-over');
      h.campaign('c2', 'scheduler', 'b', 8n, 5, 30, 500);
      const violations = checkHistory(h.events).violations;
      expect(violations.map((violation) => violation.property), end).toEqual(['S8']);
      expect(violations[0]?.message, end).toContain('the term of "scheduler" did not increase');
    }
  });

  it('allows a lower term to a leader elected within the slack of the previous one\'s end (times of different processes)', () => {
    const h = new HistoryBuilder();
    h.campaign('c1', 'scheduler', 'a', 9n, 0, 1, 500);
    h.release('c1', 'scheduler', 'a', 10, 11);
    // Elected 1 ms after the release was invoked: within the 2 ms slack, no order can be concluded.
    h.campaign('c2', 'scheduler', 'b', 8n, 5, 11, 500);
    expect(propertiesOf(h.events)).toEqual([]);
  });

  it('checks leaderships without terms (fencing none) for overlap only', () => {
    const h = new HistoryBuilder();
    h.campaign('c1', 'scheduler', 'a', null, 0, 1, 500);
    h.release('c1', 'scheduler', 'a', 10, 11);
    h.campaign('c2', 'scheduler', 'b', null, 12, 13, 500);
    expect(propertiesOf(h.events)).toEqual([]);
    h.campaign('c3', 'scheduler', 'c', null, 14, 15, 500);
    expect(propertiesOf(h.events)).toEqual(['S8']);
  });

  it('never concludes anything from an indeterminate campaign', () => {
    const h = new HistoryBuilder();
    h.campaign('c1', 'scheduler', 'a', 5n, 0, 1, 500);
    h.event({ proc: 'c2', key: 'scheduler', f: 'acquire', type: 'invoke', atMs: 2, value: 'c2' });
    h.event({ proc: 'c2', key: 'scheduler', f: 'acquire', type: 'info', atMs: 3, err: 'LOCK_BACKEND_UNAVAILABLE', value: 'c2' });
    expect(propertiesOf(h.events)).toEqual([]);
  });
});

describe('campaign fields in the history format', () => {
  it('round-trips the value (empty too), and refuses a value that is not a string or beside a limit', () => {
    const h = new HistoryBuilder();
    h.campaign('c1', 'scheduler', 'a', 1n, 0, 1, 500, '');
    const ok = h.events[1]!;
    expect(parseEvent(serializeEvent(ok))).toEqual(ok);
    expect(parseEvent(serializeEvent(ok))).toMatchObject({ value: '' });
    const json = JSON.parse(serializeEvent(ok)) as Record<string, unknown>;
    expect(() => parseEvent(JSON.stringify({ ...json, value: 3 }))).toThrow(/"value" must be a string/);
    expect(() => parseEvent(JSON.stringify({ ...json, limit: 2, permits: 1 }))).toThrow(/do not go together/);
    const lock = new HistoryBuilder();
    lock.acquire('c1', 'k', 'a', 1n, 0, 1, 500);
    expect(parseEvent(serializeEvent(lock.events[1]!))).not.toHaveProperty('value');
  });
});

describe('an election history recorded from MemoryLockProvider', () => {
  it('passes S8 under contention; the same history with two terms swapped fails it', async () => {
    const providers: LockProvider[] = [new MemoryLockProvider(), new MemoryLockProvider()];
    const store = (providers[0] as MemoryLockProvider).store;
    providers[1] = new MemoryLockProvider({ store });
    let seq = 0;
    const events: HistoryEvent[] = [];
    // The recorder's client clock is the axis here (one process): t = tc.
    const record = (event: HistoryEventInput): void => {
      events.push({ ...event, run: 'memory-election', seq: seq++, t: event.tc ?? 0 } as HistoryEvent);
    };
    try {
      const work = async (proc: string, provider: LockProvider): Promise<void> => {
        const recorder = createLockRecorder({ proc, sink: record });
        recorder.watch(provider);
        for (let round = 0; round < 8; round += 1) {
          const leader = await recorder.campaign(provider, 'scheduler', { value: proc, waitMs: 5_000 });
          expect(leader).toBeDefined();
          await new Promise((resolve) => setImmediate(resolve));
          expect(await recorder.release(leader!)).toBe(true);
        }
      };
      await Promise.all([work('c1', providers[0]!), work('c2', providers[0]!), work('c3', providers[1]!), work('c4', providers[1]!)]);
      const refused = await createLockRecorder({ proc: 'c5', sink: record }).campaign(providers[1]!, 'scheduler', { value: 'x'.repeat(2_000) });
      expect(refused).toBeUndefined();
    } finally {
      await Promise.all(providers.map((provider) => provider.close()));
    }
    const oks = events.filter((event): event is ClientEvent => !isNemesisEvent(event) && event.f === 'acquire' && event.type === 'ok');
    expect(oks).toHaveLength(32);
    expect(oks.every((event) => event.value === event.proc && event.token !== null)).toBe(true);
    expect(events.at(-1)).toMatchObject({ f: 'acquire', type: 'fail', err: 'LOCK_INVALID_ARGUMENT' });
    expect(checkHistory(events).violations).toEqual([]);
    // Swap the terms of the first and last leaderships: the first now outranks every later one.
    const [first, last] = [oks[0]!, oks.at(-1)!];
    const swapped = events.map((event) => (event === first ? { ...event, token: last.token } : event === last ? { ...event, token: first.token } : event));
    const properties = propertiesOf(swapped);
    expect(properties).toContain('S8');
    expect(properties.every((property) => property === 'S8')).toBe(true);
  });
});
