import { createHash } from 'node:crypto';
import { LockRangeError, LockTypeError } from '@fencelock/core/adapter';

/** Maps a user's key to the 64-bit id of a PostgreSQL advisory lock. */
export type LockIdFunction = (key: string) => bigint;

/** The namespace hashed in front of every key unless the provider is given another. */
export const DEFAULT_NAMESPACE = 'fencelock:';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * The documented key → advisory lock id mapping: the first 8 bytes of SHA-256 over the UTF-8 bytes
 * of `namespace + key`, read as a big-endian signed 64-bit integer (PostgreSQL's `bigint`).
 *
 * The same id in SQL, for a key without NUL characters (PostgreSQL text cannot hold NUL):
 * `('x' || left(encode(sha256(convert_to('fencelock:' || 'my-key', 'UTF8')), 'hex'), 16))::bit(64)::bigint`.
 *
 * Two keys whose ids collide (a chance of about n²/2⁶⁵ among n keys) share one advisory lock: they
 * contend with each other (false contention), but one key never has two holders.
 */
export function advisoryLockId(key: string, namespace: string = DEFAULT_NAMESPACE): bigint {
  return createHash('sha256').update(namespace + key, 'utf8').digest().readBigInt64BE(0);
}

/**
 * How `pg_locks` shows a bigint advisory lock: the high 32 bits in `classid`, the low 32 bits in
 * `objid` (both unsigned), with `objsubid = 1`.
 */
export function lockIdParts(id: bigint): { readonly classid: string; readonly objid: string } {
  const unsigned = BigInt.asUintN(64, id);
  return { classid: (unsigned >> 32n).toString(), objid: (unsigned & 0xffff_ffffn).toString() };
}

/** Runs a user's lock id function and checks what it returned (before any I/O). */
export function checkedLockId(lockId: LockIdFunction, key: string): bigint {
  const id = lockId(key);
  if (typeof id !== 'bigint') {
    throw new LockTypeError('options.lockId', `options.lockId must return a bigint, got ${typeof id} for key "${key}"`);
  }
  if (id < INT64_MIN || id > INT64_MAX) {
    throw new LockRangeError('options.lockId', `options.lockId must return a signed 64-bit integer, got ${id} for key "${key}"`);
  }
  return id;
}
