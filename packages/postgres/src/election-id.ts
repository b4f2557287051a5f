import { createHash } from 'node:crypto';

/** What is hashed in front of a name's lock id to make its election's advisory lock id. */
export const ELECTION_ID_PREFIX = 'fencelock-election:';

/**
 * The advisory lock id of the election whose name has the 64-bit lock id `lockId` (the id a lock of
 * that name would have, from the provider's `lockId` or the namespace hash): the first 8 bytes of
 * SHA-256 over `'fencelock-election:' + lockId` (the id in decimal), read as a big-endian signed
 * 64-bit integer. Elections are bigint advisory locks like the provider's locks (`objsubid = 1` in
 * `pg_locks`), in an id space of their own: the id is a hash of the lock id, never the lock id, so
 * a lock and an election of the same name are two advisory locks (they collide with the chance of
 * two hashes, about 2⁻⁶⁴ a pair). Semaphores use the two-int4 space (`objsubid = 2`) and never meet
 * either.
 *
 * The same id in SQL, from the lock id `L`:
 * `('x' || left(encode(sha256(convert_to('fencelock-election:' || L::text, 'UTF8')), 'hex'), 16))::bit(64)::bigint`.
 */
export function electionLockId(lockId: bigint): bigint {
  return createHash('sha256').update(ELECTION_ID_PREFIX + lockId.toString(), 'utf8').digest().readBigInt64BE(0);
}

/** The LISTEN/NOTIFY payload of an election's changes (a lock's release notice is its bare id). */
export function electionPayload(id: bigint): string {
  return `election:${id}`;
}
