import { type CheckContext, formatTime } from './check-context.js';
import { describeHold } from './check-overlap.js';
import { type HistoryModel, holdsBeside } from './holds.js';
import { type Violation, seqList } from './violation.js';

/**
 * S6, no resurrection: on a hold that was lost, or whose validity had passed, `extend` never returns
 * ok (it must reject with `LOCK_LOST`, even if nobody took the lock meanwhile) and `release` never
 * returns ok after the loss signal. A release that returns ok after the deadline is allowed while
 * nobody else holds the key (the backend may still have kept it), but not while another hold is in
 * its window: then it removed, or claims to have removed, another holder's lock.
 */
export function checkResurrection(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  for (const hold of model.holds) {
    for (const extension of hold.extensions) {
      if (!extension.afterLoss && !extension.afterExpiry) continue;
      const why = extension.afterLoss
        ? `after its loss was signalled at ${formatTime(context, hold.lost?.t ?? 0)}`
        : `after its validity had ended`;
      violations.push({
        property: 'S6',
        run: context.run,
        key: hold.key,
        events: seqList([hold.ok.seq, extension.afterLoss ? hold.lost?.seq : undefined, extension.invoke?.seq, extension.completion.seq]),
        message: `${describeHold(hold)} extended its lock successfully at ${formatTime(context, extension.at)}, ${why}`,
      });
    }
    const completion = hold.release?.completion;
    if (completion?.type !== 'ok') continue;
    const start = hold.release?.invoke ?? completion;
    const lost = hold.lost;
    if (lost !== undefined && (lost.t < start.t || (lost.t === start.t && lost.seq < start.seq))) {
      violations.push({
        property: 'S6',
        run: context.run,
        key: hold.key,
        events: seqList([hold.ok.seq, lost.seq, hold.release?.invoke?.seq, completion.seq]),
        message: `${describeHold(hold)} released its lock with result "held" at ${formatTime(context, completion.t)}, after its loss was signalled`,
      });
      continue;
    }
    if (hold.deadline === null || start.t <= hold.deadline + context.slackNs) continue;
    // Only a holder granted before the release was even invoked is certainly affected: one granted
    // while the release was in flight may have been granted because the release freed the key.
    const others = holdsBeside(model, hold).filter(
      (other) => other.lockId !== hold.lockId && other.start < start.t - context.slackNs && other.end > start.t,
    );
    for (const other of others) {
      violations.push({
        property: 'S6',
        run: context.run,
        key: hold.key,
        events: seqList([hold.ok.seq, hold.release?.invoke?.seq, completion.seq, other.ok.seq]),
        message:
          `${describeHold(hold)} released its expired lock with result "held" at ${formatTime(context, completion.t)} ` +
          `while ${describeHold(other)} held it: it removed another holder's lock`,
      });
    }
  }
  return violations;
}
