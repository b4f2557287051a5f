import { LockError, LockErrorCode, forbiddenError, keyConflictError } from '@fencelock/core/adapter';
import { redisKeyConflict, redisRefusal } from '@fencelock/redis-shared';
import type { MasterNode } from './master-node.js';
import { type RoundTally, describeFailures } from './node-outcomes.js';

/**
 * `LOCK_FORBIDDEN` when the masters that refused this identity or its certificates (NOPERM,
 * WRONGPASS, NOAUTH in their reply, or a connection refused for that reason) are enough to keep a
 * majority out of reach: retrying cannot help then. `undefined` otherwise (the round failed for other
 * reasons, or enough masters are left to make a majority).
 */
export function refusedQuorumError(key: string, what: string, quorum: number, tally: RoundTally, masters: readonly MasterNode[]): LockError | undefined {
  let refused = 0;
  let detail: string | undefined;
  tally.nodes.forEach((node, index) => {
    if (node.outcome !== 'error') return;
    const why = redisRefusal(node.error) ?? masters[index]?.client.connectionRefusal();
    if (why === undefined) return;
    refused += 1;
    detail ??= why;
  });
  if (detail === undefined || tally.nodes.length - refused >= quorum) return undefined;
  const refusal = forbiddenError('Redis', `${what} lock "${key}" on ${refused} of ${tally.nodes.length} masters`, detail, undefined, key);
  return new LockError(LockErrorCode.FORBIDDEN, refusal.message, { key, nodes: tally.nodes });
}

/**
 * `LOCK_KEY_CONFLICT` when the masters that answered `WRONGTYPE` (a value of another type, written by
 * something else, at the lock key or its line of waiters) are enough to keep a majority out of
 * reach: waiting does not change that. `undefined` otherwise.
 */
export function conflictingQuorumError(key: string, what: string, quorum: number, tally: RoundTally): LockError | undefined {
  let conflicting = 0;
  let detail: string | undefined;
  for (const node of tally.nodes) {
    const why = node.outcome === 'error' ? redisKeyConflict(node.error) : undefined;
    if (why === undefined) continue;
    conflicting += 1;
    detail ??= why;
  }
  if (detail === undefined || tally.nodes.length - conflicting >= quorum) return undefined;
  const conflict = keyConflictError(`${what} lock "${key}"`, `on ${conflicting} of ${tally.nodes.length} masters, the lock key or its side keys`, detail, undefined, key);
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
