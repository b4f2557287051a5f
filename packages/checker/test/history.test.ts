import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  HistoryFormatError,
  createHistoryWriter,
  parseFencedWriteLog,
  serializeFencedWrite,
  splitRuns,
  mergeHistories,
  parseEvent,
  parseHistory,
  performanceMsToMonotonicNs,
  monotonicNs,
  readHistoryFile,
  serializeEvent,
} from '../src/index.js';
import { HistoryBuilder } from './support/history-builder.js';

const directory = mkdtempSync(join(tmpdir(), 'fencelock-history-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('the JSONL record', () => {
  it('writes tokens as decimal strings and reads them back as bigint, beyond 2^53', () => {
    const h = new HistoryBuilder('r');
    h.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'ok', atMs: 1, token: 2n ** 63n - 1n, lockId: 'a', validUntilMs: 100, ttlGranted: 2000 });
    const nemesis = h.nemesis('start-partition', 2, 'n1');
    const [event] = h.events;
    if (event === undefined) throw new Error('no event');
    const line = serializeEvent(event);
    expect(JSON.parse(line)).toMatchObject({ token: '9223372036854775807', f: 'acquire' });
    expect(parseEvent(line)).toEqual(event);
    expect(parseEvent(serializeEvent(nemesis))).toEqual(nemesis);
  });

  it('refuses records that break the format, naming the line', () => {
    const good = serializeEvent(new HistoryBuilder('r').event({ proc: 'p', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 }));
    const bad = (patch: Record<string, unknown>): string => JSON.stringify({ ...JSON.parse(good), ...patch });
    for (const line of [
      bad({ f: 'steal' }),
      bad({ type: 'maybe' }),
      bad({ token: 12 }),
      bad({ token: '1.5' }),
      bad({ t: -1 }),
      bad({ t: '5' }),
      bad({ seq: 1.5 }),
      bad({ key: 3 }),
      bad({ validUntil: 'soon' }),
      '[1,2]',
      '{not json',
    ]) {
      expect(() => parseHistory(`${good}\n${line}\n`)).toThrow(HistoryFormatError);
    }
    try {
      parseHistory(`${good}\n${bad({ f: 'steal', seq: 1 })}\n`);
    } catch (error) {
      expect(error).toBeInstanceOf(HistoryFormatError);
      expect((error as HistoryFormatError).line).toBe(2);
    }
  });

  it('drops a torn last line only when asked to, and refuses a repeated seq', () => {
    const good = serializeEvent(new HistoryBuilder('r').event({ proc: 'p', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 }));
    expect(parseHistory(`${good}\n{"run":"r","se`)).toHaveLength(1);
    expect(() => parseHistory(`${good}\n{"run":"r","se`, { tolerateTornTail: false })).toThrow(HistoryFormatError);
    expect(() => parseHistory(`${good}\n${good}\n`)).toThrow(/appears twice/);
  });
});

describe('the writer', () => {
  it('appends one line per event with run, seq and t, and reads back what it wrote', () => {
    const path = join(directory, 'history.jsonl');
    let clock = 1_000;
    const writer = createHistoryWriter({ path, run: 'r1', now: () => (clock += 10) });
    const written = [
      writer.record({ tc: 5, proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', token: null, lockId: null, validUntil: null, ttlGranted: null, err: null }),
      writer.record({ t: 2_000, tc: 6, proc: 'p1', key: 'k', f: 'acquire', type: 'ok', token: 3n, lockId: 'a', validUntil: 9_000, ttlGranted: 2000, err: null }),
    ];
    writer.close();
    writer.close();
    expect(() => writer.record({ tc: 7, proc: 'p1', key: 'k', f: 'lost', type: 'info', token: null, lockId: 'a', validUntil: null, ttlGranted: null, err: 'expired' })).toThrow(/closed/);
    expect(readFileSync(path, 'utf8').split('\n')).toHaveLength(3);
    expect(written.map((event) => [event.seq, event.t])).toEqual([[0, 1_010], [1, 2_000]]);
    expect(readHistoryFile(path)).toEqual(written);
  });

  it('merges per-process histories in time order with fresh seq numbers', () => {
    const a = new HistoryBuilder('r');
    a.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    a.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'ok', atMs: 10, token: 1n, lockId: 'a' });
    const b = new HistoryBuilder('r');
    b.event({ proc: 'p2', key: 'k', f: 'acquire', type: 'invoke', atMs: 5 });
    const merged = mergeHistories([a.events, b.events]);
    expect(merged.map((event) => [event.seq, event.proc])).toEqual([[0, 'p1'], [1, 'p2'], [2, 'p1']]);
  });

  it('converts a performance.now() deadline to the system-wide clock', () => {
    const before = monotonicNs();
    const converted = performanceMsToMonotonicNs(performance.now() + 1_000);
    const after = monotonicNs();
    expect(converted).not.toBeNull();
    // Bracketed by the readings around the call, so no fixed tolerance: a slow machine only widens it.
    expect(converted ?? 0).toBeGreaterThanOrEqual(before + 1e9 - (after - before) - 1);
    expect(converted ?? 0).toBeLessThanOrEqual(after + 1e9 + 1);
    expect(performanceMsToMonotonicNs(Infinity)).toBeNull();
  });
});

describe('splitting runs and the store log format', () => {
  it('splits a file of several runs, keeping order', () => {
    const a = new HistoryBuilder('a');
    a.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 0 });
    const b = new HistoryBuilder('b');
    b.event({ proc: 'p1', key: 'k', f: 'acquire', type: 'invoke', atMs: 1 });
    const runs = splitRuns([...a.events, ...b.events, ...a.events]);
    expect([...runs.keys()]).toEqual(['a', 'b']);
    expect(runs.get('a')).toHaveLength(2);
  });

  it('round-trips write records and names a bad line', () => {
    const record = { t: 5, key: 'k', token: 2n ** 64n, proc: 'p1', accepted: false, value: 'v' };
    expect(parseFencedWriteLog(`${serializeFencedWrite(record)}\n`)).toEqual([record]);
    expect(() => parseFencedWriteLog(`${serializeFencedWrite(record)}\n{"t":1}\n`)).toThrow(/line 2/);
  });
});
