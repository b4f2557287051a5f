import type { NodeOutcome } from '@fencelock/core/adapter';
import { redisRefusal, refusalCause } from '@fencelock/redis-shared';
import type { MasterNode, NodeReply } from './master-node.js';
import { NOT_AWAITED } from './vote-round.js';

/** A round's replies, counted the ways the Redlock decisions need them. */
export interface RoundTally {
  /** Masters that did what was asked (granted / extended / released). */
  readonly succeeded: number;
  /** Masters that answered "no" (the key is someone else's, or gone). */
  readonly refused: number;
  /** Masters that failed: unreachable, timed out, or answered with an error. */
  readonly failed: number;
  /** Of `failed`, those known unreachable (not connected), as opposed to slow. */
  readonly unreachable: number;
  /** Per master, in configured order, as `LockError.nodes` reports them. */
  readonly nodes: readonly NodeOutcome[];
}

/**
 * Counts replies. A "no" is reported as `held`: on acquire the key is another owner's; on extend or
 * release it is not ours any more.
 */
export function tally(masters: readonly MasterNode[], replies: readonly NodeReply<boolean>[]): RoundTally {
  let succeeded = 0;
  let refused = 0;
  let failed = 0;
  let unreachable = 0;
  const nodes = replies.map((reply, index): NodeOutcome => {
    const node = masters[index]?.name ?? `#${index}`;
    if (!reply.ok) {
      failed += 1;
      if (reply.unreachable) unreachable += 1;
      // Not an answer at all (the round was decided without it): nothing of a server's in it.
      if (reply === NOT_AWAITED) return { node, outcome: 'error', error: reply.error };
      // A refusal keeps the server's words only: a client's reply error to AUTH carries the password.
      return { node, outcome: 'error', error: redisRefusal(reply.error) === undefined ? reply.error : refusalCause(reply.error) };
    }
    if (reply.value) {
      succeeded += 1;
      return masters[index]?.outcomes.granted ?? { node, outcome: 'granted' };
    }
    refused += 1;
    return masters[index]?.outcomes.held ?? { node, outcome: 'held' };
  });
  return { succeeded, refused, failed, unreachable, nodes };
}

/** `127.0.0.1:7001 (connect ECONNREFUSED), 127.0.0.1:7002 (timed out)` for error messages. */
export function describeFailures(nodes: readonly NodeOutcome[]): string {
  return nodes
    .filter((n) => n.outcome === 'error')
    .map((n) => `${n.node} (${n.error instanceof Error ? n.error.message : String(n.error)})`)
    .join(', ');
}
