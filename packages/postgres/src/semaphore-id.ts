import { LockRangeError } from '@fencelock/core/adapter';

/**
 * How many slots (advisory locks) a semaphore key has room for: its limit can be at most this. Ten
 * bits of the second key of the two-int4 advisory lock number the slot; the other 54 bits name the
 * semaphore.
 */
export const SEMAPHORE_SLOTS = 1024;
const SLOT_BITS = 10n;
const ID_BITS = 54n;

/**
 * The advisory locks of one semaphore key. Its slot `s` is the two-int4 advisory lock
 * `(key1, key2 + s)`: `pg_try_advisory_lock(key1, key2 + s)`. `pg_locks` shows it with
 * `objsubid = 2`, `classid = classid` and `objid = objidBase + s` (both unsigned).
 */
export interface SemaphoreLockIds {
  /** The semaphore's row in the semaphore table: the low 54 bits of the key's 64-bit lock id. */
  readonly semaphoreId: bigint;
  /** The first int4 key of every slot (signed, as `pg_advisory_lock(int, int)` takes it). */
  readonly key1: number;
  /** The second int4 key of slot 0 (signed); slot `s` is `key2 + s` (its low 10 bits are zero). */
  readonly key2: number;
  /** `key1` as `pg_locks.classid` shows it (unsigned). */
  readonly classid: string;
  /** `key2` as `pg_locks.objid` shows it (unsigned); slot `s` shows as `objidBase + s`. */
  readonly objidBase: string;
}

/**
 * The advisory locks of the semaphore whose key has the 64-bit lock id `lockId` (the id its lock
 * would have, from the provider's `lockId` or the namespace hash). Semaphores live in the two-int4
 * advisory lock space and locks in the bigint one: PostgreSQL keeps the two apart (`objsubid` 2 and
 * 1), so no semaphore slot can ever be the advisory lock of a lock, whatever the ids.
 *
 * Bits: the semaphore id is the low 54 bits of `lockId`; its high 32 bits are `key1`, its low 22
 * bits followed by the 10 slot bits are `key2`. Two keys whose lock ids agree in their low 54 bits
 * share one semaphore (false contention, one limit, one counter), as colliding lock ids share a lock.
 */
export function semaphoreLockIds(lockId: bigint): SemaphoreLockIds {
  const semaphoreId = BigInt.asUintN(Number(ID_BITS), lockId);
  const key1 = semaphoreId >> (ID_BITS - 32n);
  const key2 = (semaphoreId & ((1n << (ID_BITS - 32n)) - 1n)) << SLOT_BITS;
  return {
    semaphoreId,
    key1: Number(BigInt.asIntN(32, key1)),
    key2: Number(BigInt.asIntN(32, key2)),
    classid: key1.toString(),
    objidBase: key2.toString(),
  };
}

/**
 * Refuses, before any query, a limit the slots cannot hold. Core's `MAX_SEMAPHORE_LIMIT` (checked
 * first) is the same 1024 today; this keeps a larger one from ever reaching the slot arithmetic.
 */
export function checkedSemaphoreLimit(limit: number): number {
  if (limit > SEMAPHORE_SLOTS) {
    throw new LockRangeError('options.limit', `options.limit must be at most ${SEMAPHORE_SLOTS} on PostgreSQL (one advisory lock per permit), got ${limit}`);
  }
  return limit;
}

