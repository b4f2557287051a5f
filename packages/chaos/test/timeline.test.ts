import { type HistoryEvent, parseEvent } from '@fencelock/history-checker';
import { expect, it } from 'vitest';
import { faultTimeline } from '../src/timeline.js';

const base = { key: 'k0', token: null, lockId: null, validUntil: null, ttlGranted: null, err: null, run: 'r' };
let seq = 0;
function event(t: number, fields: Record<string, unknown>): HistoryEvent {
  seq += 1;
  return parseEvent(JSON.stringify({ ...base, tc: fields.proc === 'nemesis' ? null : t, t, seq, ...fields }));
}

it('shows the nemesis steps and the grants and losses around them, in ms from the first step', () => {
  const ms = 1e6;
  const events = [
    event(0, { proc: 'nemesis', f: 'run-start', type: 'info', key: null, nemesis: {} }),
    event(100 * ms, { proc: 'c1', f: 'acquire', type: 'ok', token: '1', lockId: 'a', validUntil: 4_100 * ms, ttlGranted: 4_000 }),
    event(1_500 * ms, { proc: 'c2', f: 'acquire', type: 'ok', token: '2', lockId: 'b', validUntil: 5_500 * ms, ttlGranted: 4_000 }),
    event(1_600 * ms, { proc: 'c2', f: 'write', type: 'invoke', token: '2', lockId: 'b' }),
    event(2_000 * ms, { proc: 'nemesis', f: 'start-pause', type: 'info', key: null, nemesis: { target: 'c2', value: { ms: 5 } } }),
    event(2_250 * ms, { proc: 'c2', f: 'lost', type: 'info', lockId: 'b', err: 'session-lost' }),
  ];
  expect(faultTimeline(events)).toEqual([
    'timeline (ms from the first fault step):',
    '  -500 ms  c2 acquire ok token 2 valid until   3500 ms',
    '     0 ms  nemesis start-pause c2 {"ms":5}',
    '   250 ms  c2 lost info token — (session-lost)',
  ]);
});

it('says so when the nemesis took no step', () => {
  expect(faultTimeline([event(0, { proc: 'nemesis', f: 'run-start', type: 'info', key: null, nemesis: {} })])).toEqual(['timeline: the nemesis took no step']);
});
