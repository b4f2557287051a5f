import { monotonicNow } from '@fencelock/core/adapter';
import type { RedlockKeys } from './lock-keys.js';
import { type MasterNode, type NodeReply, NodeNotConnectedError } from './master-node.js';
import { type RoundTally, tally } from './node-outcomes.js';
import { quorumOf, remainingValidityMs, roundValidUntil } from './quorum.js';
import { acquireArguments } from './redlock-scripts.js';
import { MastersRelease } from './release-round.js';
import { type Stragglers, voteRound } from './vote-round.js';

/**
 * What a failed round left on one master: `maybe` a copy of our value (it granted, or its request
 * failed after it was sent, and the round's release got no answer), `gone` (it refused, or the
 * release was answered: no copy there now), or `untouched` (nothing was sent, nothing was answered).
 */
export type MasterCopy = 'maybe' | 'gone' | 'untouched';

/** A round that did not acquire, with what it may have left on each master (in configured order). */
interface FailedRound {
  readonly tally: RoundTally;
  readonly copies: readonly MasterCopy[];
}

/** How one acquire round ended. */
export type AcquireRound =
  /** A majority granted and validity is left: the lock is ours until `validUntil`. */
  | { readonly kind: 'acquired'; readonly validUntil: number; readonly tally: RoundTally }
  /** Too few grants while enough masters answered: another owner holds the key, or votes split. */
  | ({ readonly kind: 'contended' } & FailedRound)
  /** So many masters are unreachable (not connected) that no majority was possible at all. */
  | ({ readonly kind: 'unreachable' } & FailedRound)
  /** So many masters failed (timeouts, error replies) that no majority was possible in this round. */
  | ({ readonly kind: 'failing' } & FailedRound)
  /** A majority granted, but the round took the whole TTL (minus drift): nothing usable was left. */
  | ({ readonly kind: 'validity-exhausted'; readonly elapsedMs: number; readonly validityMs: number } & FailedRound);

/** What a round needs besides the masters. */
export interface AcquireRoundInput {
  readonly keys: RedlockKeys;
  readonly value: string;
  readonly ttlMs: number;
  readonly clockDriftFactor: number;
  readonly requestTimeoutMs: number;
  /** How long a refused attempt stays in the masters' line of waiters, in ms (0: it does not wait). */
  readonly registerMs: number;
  /** The provider's line tag, carried by its registrations (see redis-shared's `line-tag.ts`). */
  readonly lineTag: string;
  /** Whether the attempt ignores a release's reservation for the clients in line (`handoff: 'barging'`). */
  readonly barging: boolean;
}

/**
 * One Redlock acquire round, step by step as the algorithm states it (antirez, distlock):
 * 1. read the monotonic clock (`start`);
 * 2. `SET key value NX PX ttl` on ALL masters in parallel (with the line of waiters, see
 *    `redlock-scripts.ts`), the round bounded by the per-node timeout, so it costs the slowest
 *    reply, not the sum — and only up to the majority's last grant: once a majority granted, the
 *    outcome is decided and the remaining replies are not awaited;
 * 3. acquired iff a majority granted AND `validity = ttl − elapsed − drift > 0` (core's drift margin,
 *    `⌈ttl × clockDriftFactor⌉ + 2 ms`); `validUntil = start + ttl − drift` (core's `validityDeadline`
 *    from the send time: what is left at the round's end is exactly `validity`);
 * 4. otherwise release on every master that did not refuse before returning — partial grants never
 *    survive into the next round, which is what keeps split votes from livelocking waiters
 *    (node-redlock keeps them). A master that refused keeps no copy (the script compared the key
 *    with our value), so it is not asked. This release announces nothing: the key was never ours on
 *    a majority, so no holder left it. It is one attempt per master; what it could not confirm is
 *    reported in `copies`.
 */
export async function acquireRound(
  masters: readonly MasterNode[],
  input: AcquireRoundInput,
  stragglers?: Stragglers,
): Promise<AcquireRound> {
  const quorum = quorumOf(masters.length);
  const { keys, value, ttlMs, registerMs, lineTag, barging } = input;
  const start = monotonicNow();
  const args = acquireArguments(keys, value, ttlMs, registerMs, lineTag, barging);
  const replies = await voteRound(masters, (master, sink, index) => master.acquire(args, sink, index), {
    timeoutMs: input.requestTimeoutMs,
    enoughYes: quorum,
    stragglers,
  });
  const elapsedMs = monotonicNow() - start;
  const counted = tally(masters, replies);
  const validityMs = remainingValidityMs(ttlMs, elapsedMs, input.clockDriftFactor);
  if (counted.succeeded >= quorum && validityMs > 0) {
    return { kind: 'acquired', validUntil: roundValidUntil(start, ttlMs, input.clockDriftFactor), tally: counted };
  }
  // A master that refused compared its key with our value in the script: it keeps no copy and is not
  // asked, so a round refused everywhere (the common case while another owner holds the key)
  // releases nothing.
  const release = new MastersRelease(masters, { keys, value, timeoutMs: input.requestTimeoutMs, head: '' }, replies.map(refused));
  const { replies: released } = await release.attempt();
  const failed: FailedRound = { tally: counted, copies: replies.map((reply, i) => copyLeft(reply, released[i])) };
  if (counted.succeeded >= quorum) return { kind: 'validity-exhausted', elapsedMs, validityMs, ...failed };
  if (masters.length - counted.unreachable < quorum) return { kind: 'unreachable', ...failed };
  if (masters.length - counted.failed < quorum) return { kind: 'failing', ...failed };
  return { kind: 'contended', ...failed };
}

// A plain "no": the master's key held another value (or was reserved for waiters), so ours is not there.
function refused(reply: NodeReply<boolean>): boolean {
  return reply.ok && !reply.value;
}

// A master may keep a copy when it granted, or its request failed after being sent (a timeout, a
// dropped connection: it may have been applied), and the release behind it was not answered.
function copyLeft(acquired: NodeReply<boolean>, released: NodeReply<boolean> | undefined): MasterCopy {
  if (released?.ok === true) return 'gone';
  const sent = acquired.ok ? acquired.value : !(acquired.error instanceof NodeNotConnectedError);
  return sent ? 'maybe' : 'untouched';
}
