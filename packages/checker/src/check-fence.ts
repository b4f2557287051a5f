import type { CheckContext } from './check-context.js';
import type { FencedWriteRecord } from './fenced-write.js';
import type { HistoryModel } from './holds.js';
import { type Violation, seqList } from './violation.js';

/** Per key, every token some acquire returned (`ok`, or `info` that reported one), with the events. */
function legitimateTokens(model: HistoryModel): Map<string, Map<bigint, number[]>> {
  const tokens = new Map<string, Map<bigint, number[]>>();
  const add = (key: string, token: bigint | null, seq: number): void => {
    if (token === null) return;
    let perKey = tokens.get(key);
    if (perKey === undefined) {
      perKey = new Map();
      tokens.set(key, perKey);
    }
    perKey.set(token, [...(perKey.get(token) ?? []), seq]);
  };
  for (const hold of model.holds) add(hold.key, hold.token, hold.ok.seq);
  // An indeterminate acquire may have taken effect, so a token it reported may show up at the store.
  for (const attempt of model.attemptsWithoutHold) {
    if (attempt.outcome === 'info' && attempt.completion !== undefined) add(attempt.key, attempt.completion.token, attempt.completion.seq);
  }
  return tokens;
}

/** W2 set-full: no value the store acknowledged is missing from its final read of the key. */
function checkSetFull(writes: readonly FencedWriteRecord[], finalReads: Readonly<Record<string, readonly string[]>>, context: CheckContext): Violation[] {
  const present = new Map(Object.entries(finalReads).map(([key, values]) => [key, new Set(values)]));
  const violations: Violation[] = [];
  writes.forEach((write, index) => {
    const values = present.get(write.key);
    if (!write.accepted || write.value === undefined || values === undefined || values.has(write.value)) return;
    violations.push({
      property: 'S3',
      run: context.run,
      key: write.key,
      events: [],
      writes: [index],
      message: `the store acknowledged "${write.value}" on "${write.key}" (token ${write.token.toString()}) but its final read lacks it`,
    });
  });
  return violations;
}

/**
 * S3, fencing at the resource, over the store's write log in the order the store handled it: per key
 * the accepted tokens never go down (no write accepted with a token below the highest accepted
 * before it), and every accepted token was returned by some acquire of that key (no forged tokens,
 * no tokens of another key); given final reads, no acknowledged value is missing from them.
 */
export function checkFence(
  model: HistoryModel,
  writes: readonly FencedWriteRecord[],
  context: CheckContext,
  finalReads: Readonly<Record<string, readonly string[]>> = {},
): Violation[] {
  const violations: Violation[] = [];
  const tokens = legitimateTokens(model);
  const highest = new Map<string, { token: bigint; index: number }>();
  writes.forEach((write, index) => {
    if (!write.accepted) return;
    const known = tokens.get(write.key)?.get(write.token);
    if (known === undefined) {
      violations.push({
        property: 'S3',
        run: context.run,
        key: write.key,
        events: [],
        writes: [index],
        message: `the store accepted token ${write.token.toString()} on "${write.key}" from ${write.proc}, but no acquire of "${write.key}" returned it`,
      });
    }
    const before = highest.get(write.key);
    if (before !== undefined && write.token < before.token) {
      violations.push({
        property: 'S3',
        run: context.run,
        key: write.key,
        events: seqList([...(known ?? []), ...(tokens.get(write.key)?.get(before.token) ?? [])]),
        writes: [before.index, index],
        message:
          `the store accepted a stale write on "${write.key}": token ${write.token.toString()} from ${write.proc} ` +
          `after it had accepted token ${before.token.toString()}`,
      });
      return;
    }
    highest.set(write.key, { token: write.token, index });
  });
  violations.push(...checkSetFull(writes, finalReads, context));
  return violations;
}
