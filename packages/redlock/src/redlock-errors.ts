import { LockError, LockErrorCode, forbiddenError, keyConflictError } from '@fencelock/core/adapter';
import { redisKeyConflict, redisRefusal } from '@fencelock/redis-shared';
import type { MasterNode } from './master-node.js';
import { type RoundTally, describeFailures } from './node-outcomes.js';

/**
 * The masters whose failure `why` explains (a reason for each, `undefined` for the others), when
 * there are enough of them to keep a majority out of reach: their count and the first reason.
 * `undefined` while the rest could still make a majority.
 */
function decisiveFailures(
  tally: RoundTally,
  quorum: number,
  why: (error: unknown, index: number) => string | undefined,
): { readonly count: number; readonly detail: string } | undefined {
  let count = 0;
  let detail: string | undefined;
  tally.nodes.forEach((node, index) => {
    const reason = node.outcome === 'error' ? why(node.error, index) : undefined;
    if (reason === undefined) return;
    count += 1;
    detail ??= reason;
  });
  return detail === undefined || tally.nodes.length - count >= quorum ? undefined : { count, detail };
}

/**
 * `LOCK_FORBIDDEN` when the masters that refused this identity or its certificates (NOPERM,
 * WRONGPASS, NOAUTH in their reply, or a connection refused for that reason) are enough to keep a
 * majority out of reach: retrying cannot help then. `undefined` otherwise (the round failed for other
 * reasons, or enough masters are left to make a majority).
 */
export function refusedQuorumError(key: string, what: string, quorum: number, tally: RoundTally, masters: readonly MasterNode[]): LockError | undefined {
  const refused = decisiveFailures(tally, quorum, (error, index) => redisRefusal(error) ?? masters[index]?.client.connectionRefusal());
  if (refused === undefined) return undefined;
  const refusal = forbiddenError('Redis', `${what} lock "${key}" on ${refused.count} of ${tally.nodes.length} masters`, refused.detail, undefined, key);
  return new LockError(LockErrorCode.FORBIDDEN, refusal.message, { key, nodes: tally.nodes });
}

/**
 * `LOCK_KEY_CONFLICT` when the masters that answered `WRONGTYPE` (a value of another type, written by
 * something else, at the lock key or its line of waiters) are enough to keep a majority out of
 * reach: waiting does not change that. `undefined` otherwise.
 */
export function conflictingQuorumError(key: string, what: string, quorum: number, tally: RoundTally): LockError | undefined {
  const conflicting = decisiveFailures(tally, quorum, redisKeyConflict);
  if (conflicting === undefined) return undefined;
  const where = `on ${conflicting.count} of ${tally.nodes.length} masters, the lock key or its side keys`;
  const conflict = keyConflictError(`${what} lock "${key}"`, where, conflicting.detail, undefined, key);
  return new LockError(LockErrorCode.KEY_CONFLICT, conflict.message, { key, nodes: tally.nodes });
}

/**
 * `LOCK_QUORUM_NOT_REACHED` because masters failed (unreachable, timed out, error replies) — never
 * used for contention, which is "not acquired". `nodes` says what each master answered.
 */
export function quorumNotReachedError(key: string, what: string, quorum: number, tally: RoundTally): LockError {
  const total = tally.nodes.length;
  const message =
    `${what} lock "${key}": no quorum (${quorum} of ${total} masters needed, ${tally.succeeded} succeeded, ` +
    `${tally.refused} held by another owner, ${tally.failed} failed: ${describeFailures(tally.nodes)})`;
  return new LockError(LockErrorCode.QUORUM_NOT_REACHED, message, { key, nodes: tally.nodes });
}

/**
 * `LOCK_QUORUM_NOT_REACHED` because a majority granted the lock but too slowly: the round used up
 * `ttl − drift`, so no validity was left (the TTL is too small for these masters' latency).
 */
export function validityExhaustedError(
  key: string,
  tally: RoundTally,
  details: { ttlMs: number; elapsedMs: number; validityMs: number; rounds: number },
): LockError {
  const message =
    `acquiring lock "${key}": validity exhausted — a majority granted it, but the round took ` +
    `${details.elapsedMs.toFixed(1)} ms of a ${details.ttlMs} ms TTL, leaving ${details.validityMs.toFixed(1)} ms ` +
    `after the drift margin (${details.rounds} round(s)); use a larger ttlMs or faster masters`;
  return new LockError(LockErrorCode.QUORUM_NOT_REACHED, message, { key, nodes: tally.nodes });
}
