import { type CheckContext, formatTime } from './check-context.js';
import { describeHold } from './check-overlap.js';
import { invokedAt, settledAt } from './check-tokens.js';
import type { Hold, HistoryModel } from './holds.js';
import { type Violation, seqList } from './violation.js';

type FencedHold = Hold & { readonly token: bigint };

/**
 * S2: the holds linearize against the fenced mutex `{owner, fence}`, where a grant needs `owner = ∅`
 * and `token > fence`. Why this is enough instead of a WGL search: an indeterminate acquire may take
 * effect at any later time and expire at once, so it never constrains a linearization and is left
 * out; for determinate holds, each grant's linearization point lies in `[invoke, ok]`, so disjoint
 * windows (S1) fix their order, and the fence then requires every grant's token to exceed the token
 * of every hold whose window had closed before it. The sweep compares each grant with the highest
 * such token (O(n log n)). Overlapping pairs are S1's to report; when that highest hold had already
 * settled before the grant was invoked, the pair is S4's. S2 reports the rest: typically a waiter,
 * queued while A held the lock, that was then granted a token below A's.
 */
export function checkLinearizable(model: HistoryModel, context: CheckContext): Violation[] {
  const violations: Violation[] = [];
  for (const [key, holds] of model.holdsByKey) {
    const fenced = holds.filter((hold): hold is FencedHold => hold.token !== null);
    const byEnd = [...fenced].sort((a, b) => a.end - b.end);
    let next = 0;
    let highest: FencedHold | undefined;
    for (const hold of fenced) {
      for (; next < byEnd.length; next += 1) {
        const candidate = byEnd[next];
        // Only a hold that ended more than the slack before this grant fenced it: the slack absorbs
        // timing error in the holder's favour, as S1 and the election checks do (a hold that began
        // after this grant and was shorter than the slack must not count as ended before it).
        if (candidate === undefined || candidate.end + context.slackNs > hold.start) break;
        if (highest === undefined || candidate.token > highest.token) highest = candidate;
      }
      if (highest === undefined || highest.lockId === hold.lockId || highest.token <= hold.token) continue;
      if (settledAt(highest) + context.slackNs < invokedAt(hold)) continue;
      violations.push({
        property: 'S2',
        run: context.run,
        key,
        events: seqList([highest.ok.seq, hold.invoke?.seq, hold.ok.seq]),
        message:
          `not linearizable on "${key}": ${describeHold(hold)} was granted at ${formatTime(context, hold.start)}, ` +
          `after the hold of ${describeHold(highest)} ended at ${formatTime(context, highest.end)}, with a token below that fence`,
      });
    }
  }
  return violations;
}
