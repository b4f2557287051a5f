import { monotonicNow } from '@fencelock/core';
import type { RedlockKeys } from './lock-keys.js';
import type { MasterNode } from './master-node.js';
import { type RoundTally, tally } from './node-outcomes.js';
import { quorumOf, remainingValidityMs } from './quorum.js';
import { releaseOnAll } from './release-round.js';
import { type Stragglers, voteRound } from './vote-round.js';

/** How one acquire round ended. */
export type AcquireRound =
  /** A majority granted and validity is left: the lock is ours until `validUntil`. */
  | { readonly kind: 'acquired'; readonly validUntil: number; readonly tally: RoundTally }
  /** Too few grants while enough masters answered: another owner holds the key, or votes split. */
  | { readonly kind: 'contended'; readonly tally: RoundTally }
  /** So many masters are unreachable (not connected) that no majority was possible at all. */
  | { readonly kind: 'unreachable'; readonly tally: RoundTally }
  /** So many masters failed (timeouts, error replies) that no majority was possible in this round. */
  | { readonly kind: 'failing'; readonly tally: RoundTally }
  /** A majority granted, but the round took the whole TTL (minus drift): nothing usable was left. */
  | { readonly kind: 'validity-exhausted'; readonly tally: RoundTally; readonly elapsedMs: number; readonly validityMs: number };

/** What a round needs besides the masters. */
export interface AcquireRoundInput {
  readonly keys: RedlockKeys;
  readonly value: string;
  readonly ttlMs: number;
  readonly driftFactor: number;
  readonly nodeTimeoutMs: number;
  /** How long a refused attempt stays in the masters' line of waiters, in ms (0: it does not wait). */
  readonly registerMs: number;
}

/**
 * One Redlock acquire round, step by step as the algorithm states it (antirez, distlock):
 * 1. read the monotonic clock (`start`);
 * 2. `SET key value NX PX ttl` on ALL masters in parallel (with the line of waiters, see
 *    `redlock-scripts.ts`), the round bounded by the per-node timeout, so it costs the slowest
 *    reply, not the sum — and only up to the majority's last grant: once a majority granted, the
 *    outcome is decided and the remaining replies are not awaited;
 * 3. acquired iff a majority granted AND `validity = ttl − elapsed − (ttl × driftFactor + 2 ms) > 0`;
 *    `validUntil = start + validity`;
 * 4. otherwise release on EVERY master before returning — partial grants never survive into the
 *    next round, which is what keeps split votes from livelocking waiters (node-redlock keeps them).
 *    This release announces nothing: the key was never ours on a majority, so no holder left it.
 */
export async function acquireRound(
  masters: readonly MasterNode[],
  input: AcquireRoundInput,
  stragglers?: Stragglers,
): Promise<AcquireRound> {
  const quorum = quorumOf(masters.length);
  const { keys, value, ttlMs, registerMs } = input;
  const start = monotonicNow();
  const replies = await voteRound(masters, (master) => master.acquire(keys, value, ttlMs, registerMs), {
    timeoutMs: input.nodeTimeoutMs,
    enoughYes: quorum,
    ...(stragglers === undefined ? {} : { stragglers }),
  });
  const elapsedMs = monotonicNow() - start;
  const counted = tally(masters, replies);
  const validityMs = remainingValidityMs(ttlMs, elapsedMs, input.driftFactor);
  if (counted.succeeded >= quorum && validityMs > 0) {
    return { kind: 'acquired', validUntil: start + validityMs, tally: counted };
  }
  await releaseOnAll(masters, { keys, value, timeoutMs: input.nodeTimeoutMs, head: '' });
  if (counted.succeeded >= quorum) return { kind: 'validity-exhausted', tally: counted, elapsedMs, validityMs };
  if (masters.length - counted.unreachable < quorum) return { kind: 'unreachable', tally: counted };
  if (masters.length - counted.failed < quorum) return { kind: 'failing', tally: counted };
  return { kind: 'contended', tally: counted };
}
