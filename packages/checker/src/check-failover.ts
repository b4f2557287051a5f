import { type CheckContext, formatDuration, formatTime } from './check-context.js';
import { describeHold } from './check-overlap.js';
import { invokedAt } from './check-tokens.js';
import type { Hold, HistoryModel } from './holds.js';
import { type Violation, seqList } from './violation.js';

/** How long a key had no holder while someone was waiting for it. */
export interface HandoverGap {
  readonly before: Hold;
  readonly after: Hold;
  /** `after.start − max(before.end, after's acquire invoke)`, ns. */
  readonly gapNs: number;
}

/**
 * For each hold, the wait between the previous hold's end and its own grant, counted only from when
 * its acquire was invoked (a key nobody asks for is not unavailable). After a holder's crash this is
 * the failover time.
 */
export function handoverGaps(model: HistoryModel): HandoverGap[] {
  const gaps: HandoverGap[] = [];
  for (const holds of model.holdsByKey.values()) {
    for (let index = 1; index < holds.length; index += 1) {
      const before = holds[index - 1];
      const after = holds[index];
      if (before === undefined || after === undefined || before.end > after.start) continue;
      const gapNs = after.start - Math.max(before.end, invokedAt(after));
      if (gapNs > 0) gaps.push({ before, after, gapNs });
    }
  }
  return gaps;
}

/**
 * L2, failover availability: after a holder's process is killed (F1), a waiter that was already
 * waiting is granted the key within `boundNs` of the kill (the harness passes TTL + retry backoff
 * + 1 s). Quorum-loss availability (no grant on a minority side) needs the partition's topology and
 * is left to the harness.
 */
export function checkFailover(model: HistoryModel, context: CheckContext, gaps: readonly HandoverGap[], boundNs: number): Violation[] {
  return gaps
    .filter(({ before, gapNs }) => before.endCause === 'killed' && gapNs > boundNs)
    .map(({ before, after, gapNs }) => ({
      property: 'L2' as const,
      run: context.run,
      key: after.key,
      events: seqList([before.ok.seq, after.invoke?.seq, after.ok.seq]),
      message:
        `${describeHold(before)} was killed at ${formatTime(context, before.end)} and ${describeHold(after)}, waiting since ` +
        `${formatTime(context, invokedAt(after))}, got the key only ${formatDuration(gapNs)} later (bound ${formatDuration(boundNs)})`,
    }));
}
