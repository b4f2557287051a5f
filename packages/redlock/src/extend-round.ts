import { monotonicNow } from '@fencelock/core/adapter';
import type { MasterNode } from './master-node.js';
import { type RoundTally, tally } from './node-outcomes.js';
import { quorumOf, remainingValidityMs, roundValidUntil } from './quorum.js';

/** How one extend round ended. */
export type ExtendRound =
  /** A majority extended within the old validity: the new deadline. */
  | { readonly kind: 'extended'; readonly validUntil: number; readonly tally: RoundTally }
  /** So many masters said "not yours" that a majority can never be ours again: the lock is lost. */
  | { readonly kind: 'lost'; readonly tally: RoundTally }
  /** The old validity ran out before a majority confirmed. */
  | { readonly kind: 'expired'; readonly tally: RoundTally }
  /** No majority, because masters failed or the round was too slow: try again while still valid. */
  | { readonly kind: 'failed'; readonly tally: RoundTally };

/**
 * One Redlock extension round: the owner-checked extend script (`PEXPIRE` only while the key holds
 * our value, never `SET`) on ALL masters in parallel, each bounded by the per-node timeout.
 * Extended iff a majority extended AND the round finished before the current `validUntil` AND
 * `ttl − elapsed − drift > 0`; the new deadline counts from the round's SEND time:
 * `start + ttl − drift` (core's `validityDeadline`, as for acquire; never from the reply).
 * A failed round changes nothing: masters that did extend keep a longer TTL, which only delays
 * expiry of a key nobody else can take while we hold a majority.
 */
export async function extendRound(
  masters: readonly MasterNode[],
  input: { key: string; value: string; ttlMs: number; clockDriftFactor: number; requestTimeoutMs: number; validUntil: number },
): Promise<ExtendRound> {
  const quorum = quorumOf(masters.length);
  const start = monotonicNow();
  const replies = await Promise.all(masters.map((m) => m.extend(input.key, input.value, input.ttlMs, input.requestTimeoutMs)));
  const now = monotonicNow();
  const counted = tally(masters, replies);
  const validityMs = remainingValidityMs(input.ttlMs, now - start, input.clockDriftFactor);
  if (counted.succeeded >= quorum && validityMs > 0 && now < input.validUntil) {
    return { kind: 'extended', validUntil: roundValidUntil(start, input.ttlMs, input.clockDriftFactor), tally: counted };
  }
  if (masters.length - counted.refused < quorum) return { kind: 'lost', tally: counted };
  if (now >= input.validUntil) return { kind: 'expired', tally: counted };
  return { kind: 'failed', tally: counted };
}
