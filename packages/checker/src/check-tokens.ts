import { type CheckContext, formatTime } from './check-context.js';
import { describeHold } from './check-overlap.js';
import type { Hold, HistoryModel } from './holds.js';
import { type Violation, seqList } from './violation.js';

/**
 * When a hold is known to have ended for everyone, ns: its release completed (`ok`, or `fail` = it
 * was no longer held), its loss was signalled, or its validity deadline passed. A release that was
 * only invoked does not count: until it completes the lock may still be held.
 */
export function settledAt(hold: Hold): number {
  const completion = hold.release?.completion;
  const released = completion !== undefined && completion.type !== 'info' ? completion.t : Infinity;
  return Math.min(released, hold.lost?.t ?? Infinity, hold.deadline ?? Infinity);
}

/** When the acquire that made `hold` was invoked (its grant time if no invocation was recorded), ns. */
export function invokedAt(hold: Hold): number {
  return hold.invoke?.t ?? hold.start;
}

/**
 * S4: per key, tokens of successful acquires are unique, and if hold A had ended before the acquire
 * of B was invoked (real-time order, beyond the slack) then `A.token < B.token` (this also covers a
 * re-acquire after loss). Holds without tokens (fencing `none`) are skipped. Semaphore holds are
 * checked the same way, apart from the lock holds of the same key.
 */
export function checkTokens(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  // Semaphore tokens obey the same order per key (in their own namespace).
  for (const [key, holds] of [...model.holdsByKey, ...model.semaphoreHoldsByKey]) {
    const fenced = holds.filter((hold): hold is Hold & { token: bigint } => hold.token !== null);
    const byToken = new Map<bigint, Hold>();
    for (const hold of fenced) {
      const first = byToken.get(hold.token);
      if (first === undefined) {
        byToken.set(hold.token, hold);
        continue;
      }
      if (first.lockId === hold.lockId) continue;
      violations.push({
        property: 'S4',
        run: context.run,
        key,
        events: seqList([first.ok.seq, hold.ok.seq]),
        message: `token ${hold.token.toString()} of "${key}" was granted twice: to ${describeHold(first)} and to ${describeHold(hold)}`,
      });
    }
    // Sweep the B's in invocation order while admitting the A's in settle order; keep the A with the
    // highest token so far: each B is compared with it once.
    const bySettle = [...fenced].sort((a, b) => settledAt(a) - settledAt(b));
    const byInvoke = [...fenced].sort((a, b) => invokedAt(a) - invokedAt(b));
    let next = 0;
    let highest: (Hold & { token: bigint }) | undefined;
    for (const hold of byInvoke) {
      for (; next < bySettle.length; next += 1) {
        const candidate = bySettle[next];
        if (candidate === undefined || settledAt(candidate) + context.slackNs >= invokedAt(hold)) break;
        if (highest === undefined || candidate.token > highest.token) highest = candidate;
      }
      if (highest === undefined || highest.lockId === hold.lockId || highest.token <= hold.token) continue;
      violations.push({
        property: 'S4',
        run: context.run,
        key,
        events: seqList([highest.ok.seq, highest.lost?.seq, highest.release?.completion?.seq, hold.invoke?.seq, hold.ok.seq]),
        message:
          `token went backwards on "${key}": ${describeHold(highest)} had ended by ${formatTime(context, settledAt(highest))}, ` +
          `yet ${describeHold(hold)}, invoked at ${formatTime(context, invokedAt(hold))}, got a lower token`,
      });
    }
  }
  return violations;
}
