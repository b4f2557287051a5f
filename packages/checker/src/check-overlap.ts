import { type CheckContext, formatDuration, formatTime } from './check-context.js';
import type { Hold, HistoryModel } from './holds.js';
import { nemesisDuring } from './nemesis-windows.js';
import { type Violation, seqList } from './violation.js';

/** The event that ended a hold's window, if one did (an expiry ends it with no event of its own). */
export function endEventSeq(hold: Hold): number | undefined {
  if (hold.endCause === 'release') return (hold.release?.invoke ?? hold.release?.completion)?.seq;
  if (hold.endCause === 'lost') return hold.lost?.seq;
  return undefined;
}

/** "client-1 (lock a1, token 3)". */
export function describeHold(hold: Hold): string {
  return `${hold.proc} (lock ${hold.lockId}, token ${hold.token === null ? 'none' : hold.token.toString()})`;
}

/**
 * S1: no two holds of one key by different acquisitions overlap, beyond the slack. A sweep over the
 * holds in start order, keeping those still open: O(n log n + overlaps).
 */
export function checkOverlap(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  for (const [key, holds] of model.holdsByKey) {
    let open: Hold[] = [];
    for (const hold of holds) {
      // A hold whose validity had run out before it was granted never gave its holder a window.
      if (hold.end <= hold.start) continue;
      open = open.filter((other) => other.end - context.slackNs > hold.start);
      for (const other of open) {
        if (other.lockId === hold.lockId) continue;
        const overlapEnd = Math.min(other.end, hold.end);
        violations.push({
          property: 'S1',
          run: context.run,
          key,
          events: seqList([other.ok.seq, endEventSeq(other), hold.ok.seq, endEventSeq(hold)]),
          nemesis: nemesisDuring(context.windows, hold.start, overlapEnd),
          message:
            `two holders of "${key}" at once: ${describeHold(other)} held it from ${formatTime(context, other.start)} ` +
            `to ${formatTime(context, other.end)} (${other.endCause}), and ${describeHold(hold)} was granted it at ` +
            `${formatTime(context, hold.start)}: ${formatDuration(overlapEnd - hold.start)} of overlap`,
        });
      }
      open.push(hold);
    }
  }
  return violations;
}
