import { type CheckContext, formatTime } from './check-context.js';
import { describeHold } from './check-overlap.js';
import type { HistoryModel } from './holds.js';
import { type Violation, seqList } from './violation.js';

/**
 * S5: no write through the library's fence succeeds once its hold has ended: invoked after the
 * `lost` signal, after `release` was invoked, or after the validity deadline (plus slack). A write
 * invoked before the end whose acknowledgement arrives later is allowed (it was in flight); writes
 * that bypass the library are the fenced store's business (S3).
 */
export function checkAfterLoss(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  for (const hold of model.holds) {
    const release = hold.release?.invoke ?? hold.release?.completion;
    for (const write of hold.writes) {
      if (write.completion?.type !== 'ok') continue;
      const start = write.invoke ?? write.completion;
      const after = (event: { t: number; seq: number } | undefined): boolean =>
        event !== undefined && (event.t < start.t || (event.t === start.t && event.seq < start.seq));
      let why: string | undefined;
      let cause: number | undefined;
      if (after(hold.lost)) {
        why = `its loss was signalled at ${formatTime(context, hold.lost?.t ?? 0)}`;
        cause = hold.lost?.seq;
      } else if (after(release)) {
        why = `its release was invoked at ${formatTime(context, release?.t ?? 0)}`;
        cause = release?.seq;
      } else if (hold.deadline !== null && start.t > hold.deadline + context.slackNs) {
        why = `its validity ended at ${formatTime(context, hold.deadline)}`;
      }
      if (why === undefined) continue;
      violations.push({
        property: 'S5',
        run: context.run,
        key: hold.key,
        events: seqList([hold.ok.seq, cause, write.invoke?.seq, write.completion.seq]),
        message: `${describeHold(hold)} wrote through the library at ${formatTime(context, start.t)} and it succeeded, although ${why}`,
      });
    }
  }
  return violations;
}
