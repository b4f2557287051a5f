import { LockRangeError } from '@fencelock/core/adapter';
import { RESERVED_KEY_PATTERN, hashSlot, hashTagForSlot } from '@fencelock/redis-shared';

/**
 * Where a lock and its side keys live.
 *
 * - The lock itself is at exactly `keyPrefix + key` and holds the owner id, so other SET-NX locks on
 *   the same name (node-redlock, redis-py's `Lock`) interoperate. Concatenation with a fixed prefix
 *   is injective and Redis keys are byte strings, so every key core accepts ('/', '..', NUL, emoji)
 *   is its own lock.
 * - Side keys are `{<tag>}fencelock:<kind>:<lock key>`, where `<tag>` is a short base-36 hash tag
 *   chosen so that the side key hashes to the lock key's Redis Cluster slot (whatever braces the
 *   lock key contains). Different lock keys give different side keys (the lock key is the suffix
 *   after a brace-free, self-delimiting header).
 * - Lock keys that look like side keys (matching {@link RESERVED_KEY_PATTERN}) are refused, so no
 *   lock can ever collide with another lock's fence counter.
 */
export interface RedisLockKeys {
  /** The lock key: `keyPrefix + key`. */
  readonly lock: string;
  /** The fence counter (a decimal string; never expires). */
  readonly fence: string;
  /** The metadata string (`<token> <owner byte length> <owner>[ <metadata>]`), expiring with the lock's TTL. */
  readonly meta: string;
  /** The waiter registry (a sorted set of waiting owner ids), expiring when no one waits. */
  readonly waiters: string;
  /** The hand-off reservation a release leaves for the registered waiters, for a moment. */
  readonly reserved: string;
  /** The registered waiters' direct-grant asks (a hash by registration), expiring with the registry. */
  readonly grants: string;
}

/** The keys of `key` under `keyPrefix`. Throws `LOCK_INVALID_ARGUMENT` for a reserved key. */
export function redisLockKeys(keyPrefix: string, key: string): RedisLockKeys {
  const lock = keyPrefix + key;
  if (RESERVED_KEY_PATTERN.test(lock)) {
    throw new LockRangeError(
      'key',
      `lock key "${lock}" is reserved: keys of the form {<tag>}fencelock:… hold fencelock's fence counters and metadata`,
    );
  }
  const header = `{${hashTagForSlot(hashSlot(lock))}}fencelock:`;
  return {
    lock,
    fence: `${header}fence:${lock}`,
    meta: `${header}meta:${lock}`,
    waiters: `${header}waiters:${lock}`,
    reserved: `${header}handoff:${lock}`,
    grants: `${header}grants:${lock}`,
  };
}
