import { type CheckContext, formatDuration, formatTime } from './check-context.js';
import { describeHold, endEventSeq } from './check-overlap.js';
import type { Hold, HistoryModel } from './holds.js';
import { nemesisDuring } from './nemesis-windows.js';
import { type Violation, seqList } from './violation.js';

type Leadership = Hold & { readonly election: NonNullable<Hold['election']> };

/** "client-1 (lock a1, term 3, value "host-a")". */
function describeLeader(hold: Leadership): string {
  return describeHold(hold).replace(', token ', ', term ').replace(/\)$/, `, value ${JSON.stringify(hold.election.value)})`);
}

/**
 * S8, leader election: per election name (acquires carrying a `value`),
 * - at most one leader per term: no term is granted to two campaigns;
 * - terms strictly increase from leader to leader: a leadership granted after another one's window
 *   had closed (beyond the slack) has a greater term;
 * - no two leaders at once: no two leaderships' windows overlap beyond the slack (S1's sweep).
 * Leaderships without a term (fencing `none`) are held to the last rule only.
 */
export function checkElections(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  for (const [name, holds] of model.electionHoldsByKey) {
    const leaderships = (holds as readonly Leadership[]).filter((hold) => hold.end > hold.start);
    const byTerm = new Map<bigint, Leadership>();
    for (const hold of leaderships) {
      if (hold.token === null) continue;
      const first = byTerm.get(hold.token);
      if (first === undefined) byTerm.set(hold.token, hold);
      else if (first.lockId !== hold.lockId) {
        violations.push({
          property: 'S8',
          run: context.run,
          key: name,
          events: seqList([first.ok.seq, hold.ok.seq]),
          message: `two leaders of "${name}" in term ${hold.token.toString()}: ${describeLeader(first)} and ${describeLeader(hold)}`,
        });
      }
    }
    // Leaderships in start order against those whose windows closed before each start, by end.
    const byEnd = [...leaderships].sort((a, b) => a.end - b.end);
    let closed = 0;
    let highest: Leadership | undefined;
    let open: Leadership[] = [];
    for (const hold of leaderships) {
      for (; closed < byEnd.length; closed += 1) {
        const candidate = byEnd[closed]!;
        if (candidate.end + context.slackNs >= hold.start) break;
        if (candidate.token !== null && (highest === undefined || highest.token === null || candidate.token > highest.token)) highest = candidate;
      }
      if (hold.token !== null && highest !== undefined && highest.token !== null && highest.lockId !== hold.lockId && highest.token >= hold.token) {
        violations.push({
          property: 'S8',
          run: context.run,
          key: name,
          events: seqList([highest.ok.seq, endEventSeq(highest), hold.ok.seq]),
          message:
            `the term of "${name}" did not increase: ${describeLeader(highest)} led until ${formatTime(context, highest.end)} ` +
            `(${highest.endCause}), and ${describeLeader(hold)}, elected after it at ${formatTime(context, hold.start)}, got term ` +
            `${hold.token.toString()}`,
        });
      }
      open = open.filter((other) => other.end - context.slackNs > hold.start);
      for (const other of open) {
        if (other.lockId === hold.lockId) continue;
        const overlapEnd = Math.min(other.end, hold.end);
        violations.push({
          property: 'S8',
          run: context.run,
          key: name,
          events: seqList([other.ok.seq, endEventSeq(other), hold.ok.seq, endEventSeq(hold)]),
          nemesis: nemesisDuring(context.windows, hold.start, overlapEnd),
          message:
            `two leaders of "${name}" at once: ${describeLeader(other)} led from ${formatTime(context, other.start)} to ` +
            `${formatTime(context, other.end)} (${other.endCause}), and ${describeLeader(hold)} was elected at ` +
            `${formatTime(context, hold.start)}: ${formatDuration(overlapEnd - hold.start)} of overlap`,
        });
      }
      open.push(hold);
    }
  }
  return violations;
}
