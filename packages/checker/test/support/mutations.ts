import { type HistoryEvent, type FencedWriteRecord, type Hold, buildHistoryModel } from '../../src/index.js';

/**
 * Ways to break a correct history, each aimed at one property. Each returns `undefined` when the
 * history offers no place for it (fast-check then discards the case).
 */

const SLACK_NS = 2e6;
const holdsOf = (events: readonly HistoryEvent[]): readonly Hold[] => buildHistoryModel('model', events, { slackNs: SLACK_NS, clock: 'shared' }).holds;
const settled = (hold: Hold): number => Math.min(hold.release?.completion?.t ?? Infinity, hold.lost?.t ?? Infinity, hold.deadline ?? Infinity);

function renumber(events: HistoryEvent[]): HistoryEvent[] {
  return events.sort((a, b) => a.t - b.t || a.seq - b.seq).map((event, seq) => ({ ...event, seq }));
}

/** S4: swap the tokens of two holds of a key where the first had ended before the second was invoked. */
export function swapTokens(events: readonly HistoryEvent[]): HistoryEvent[] | undefined {
  for (const first of holdsOf(events)) {
    const second = holdsOf(events).find(
      (other) => other.key === first.key && other.token !== null && first.token !== null && settled(first) + SLACK_NS < (other.invoke?.t ?? other.start),
    );
    if (second === undefined) continue;
    return events.map((event) => {
      if (event.seq === first.ok.seq) return { ...first.ok, token: second.token };
      if (event.seq === second.ok.seq) return { ...second.ok, token: first.token };
      return event;
    });
  }
  return undefined;
}

/** S1: drop a release after which another holder was granted the key before the first's deadline. */
export function dropRelease(events: readonly HistoryEvent[]): HistoryEvent[] | undefined {
  const holds = holdsOf(events);
  for (const hold of holds) {
    if (hold.endCause !== 'release' || hold.deadline === null) continue;
    const deadline = hold.deadline;
    const next = holds.find((other) => other.key === hold.key && other.start > hold.start && other.start < deadline - 2 * SLACK_NS);
    if (next === undefined) continue;
    const drop = new Set([hold.release?.invoke?.seq, hold.release?.completion?.seq]);
    return renumber(events.filter((event) => !drop.has(event.seq)));
  }
  return undefined;
}

/** S1: move a deadline later, for a hold whose loss signal came after the next holder's grant. */
export function shiftValidUntil(events: readonly HistoryEvent[]): HistoryEvent[] | undefined {
  const holds = holdsOf(events);
  for (const hold of holds) {
    const lost = hold.lost;
    if (hold.endCause !== 'expired' || lost === undefined) continue;
    const next = holds.find((other) => other.key === hold.key && other.start > hold.start && other.start < lost.t - 2 * SLACK_NS);
    if (next === undefined) continue;
    const carriers = new Set([hold.ok.seq, ...hold.extensions.map((extension) => extension.completion.seq)]);
    return events.map((event) => (carriers.has(event.seq) && event.validUntil !== null ? { ...event, validUntil: lost.t + 1e9 } : event));
  }
  return undefined;
}

/** S3: make the store accept a stale write (flip a refusal, or add a write with an old token). */
export function acceptStaleWrite(writes: readonly FencedWriteRecord[]): FencedWriteRecord[] | undefined {
  const refused = writes.findIndex((write) => !write.accepted);
  if (refused >= 0) return writes.map((write, index) => (index === refused ? { ...write, accepted: true } : write));
  const last = writes[writes.length - 1];
  for (const write of writes) {
    if (last === undefined || !write.accepted) continue;
    const higher = writes.some((other) => other.key === write.key && other.accepted && other.token > write.token);
    if (higher) return [...writes, { ...write, t: last.t + 1e6 }];
  }
  return undefined;
}

/** S5: add a successful write through the library after a hold's loss signal. */
export function writeAfterLoss(events: readonly HistoryEvent[]): HistoryEvent[] | undefined {
  const hold = holdsOf(events).find((candidate) => candidate.lost !== undefined);
  const lost = hold?.lost;
  if (hold === undefined || lost === undefined) return undefined;
  const base = { ...lost, f: 'write' as const, token: hold.token, err: null };
  return renumber([...events, { ...base, type: 'invoke', t: lost.t + 1, seq: 1e9 }, { ...base, type: 'ok', t: lost.t + 2, seq: 1e9 + 1 }]);
}

/** S6: add a successful extension after a hold's loss signal. */
export function extendAfterLoss(events: readonly HistoryEvent[]): HistoryEvent[] | undefined {
  const hold = holdsOf(events).find((candidate) => candidate.lost !== undefined);
  const lost = hold?.lost;
  if (hold === undefined || lost === undefined) return undefined;
  const base = { ...lost, f: 'extend' as const, err: null };
  return renumber([
    ...events,
    { ...base, type: 'invoke', t: lost.t + 1, seq: 1e9 },
    { ...base, type: 'ok', t: lost.t + 2, seq: 1e9 + 1, validUntil: lost.t + 100e6, ttlGranted: 100 },
  ]);
}
