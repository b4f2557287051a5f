import { type CheckContext, formatTime } from './check-context.js';
import { describeHold, endEventSeq } from './check-overlap.js';
import type { Hold, HistoryModel } from './holds.js';
import { nemesisDuring } from './nemesis-windows.js';
import { type Violation, seqList } from './violation.js';

type SemaphoreHold = Hold & { readonly semaphore: NonNullable<Hold['semaphore']> };

/**
 * S7, at most N holders: per semaphore key, the permits of the holds whose windows overlap never
 * add up to more than the limit, and overlapping holds agree on the limit (a second limit is a
 * second semaphore in disguise). The same sweep as S1: holds in start order, keeping those still
 * open beyond the slack; each grant is compared with the holds open at its start.
 */
export function checkSemaphores(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  for (const [key, holds] of model.semaphoreHoldsByKey) {
    let open: SemaphoreHold[] = [];
    for (const hold of holds as readonly SemaphoreHold[]) {
      // A hold whose validity had run out before it was granted never gave its holder a window.
      if (hold.end <= hold.start) continue;
      open = open.filter((other) => other.end - context.slackNs > hold.start && other.lockId !== hold.lockId);
      const { limit, permits } = hold.semaphore;
      const disagreeing = open.filter((other) => other.semaphore.limit !== limit);
      if (disagreeing.length > 0) {
        violations.push(violation(context, key, hold, disagreeing, (others) =>
          `two limits on semaphore "${key}" at once: ${describeHold(hold)} was granted with limit ${limit} at ` +
          `${formatTime(context, hold.start)} while ${others} held it with another (${disagreeing.map((other) => other.semaphore.limit).join(', ')})`,
        ));
      }
      const held = open.reduce((sum, other) => sum + other.semaphore.permits, permits);
      if (held > limit) {
        violations.push(violation(context, key, hold, open, (others) =>
          `${held} permits of semaphore "${key}" (limit ${limit}) held at once: ${describeHold(hold)} was granted ` +
          `${permits} at ${formatTime(context, hold.start)} while ${others} held the rest`,
        ));
      }
      open.push(hold);
    }
  }
  return violations;
}

function violation(
  context: CheckContext,
  key: string,
  hold: SemaphoreHold,
  others: readonly SemaphoreHold[],
  message: (others: string) => string,
): Violation {
  const overlapEnd = Math.min(hold.end, ...others.map((other) => other.end));
  return {
    property: 'S7',
    run: context.run,
    key,
    events: seqList([hold.ok.seq, endEventSeq(hold), ...others.flatMap((other) => [other.ok.seq, endEventSeq(other)])]),
    nemesis: nemesisDuring(context.windows, hold.start, overlapEnd),
    message: message(others.map((other) => `${describeHold(other)} (${other.semaphore.permits} of ${other.semaphore.limit})`).join(', ')),
  };
}
