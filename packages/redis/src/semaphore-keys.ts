import { LockRangeError } from '@fencelock/core/adapter';
import { RESERVED_KEY_PATTERN, hashSlot, hashTagForSlot } from '@fencelock/redis-shared';

/**
 * Where a semaphore lives: three side keys `{<tag>}fencelock:sem-<kind>:<keyPrefix><key>`, hash-tagged
 * to the slot of `keyPrefix + key` (as a lock's side keys are) so that one script reaches them all on
 * a Cluster. Semaphores are a namespace apart from locks: no lock key or lock side key is among them
 * (a lock is at `keyPrefix + key` itself and its side keys use other kinds).
 */
export interface RedisSemaphoreKeys {
  /** The sorted set of holders (`<permits>|<owner id>`, scored by expiry). */
  readonly holders: string;
  /** The hash owner id → `<limit> <token>[ <metadata>]`. */
  readonly info: string;
  /** The token counter. */
  readonly fence: string;
}

/** The keys of semaphore `key` under `keyPrefix`. Throws `LOCK_INVALID_ARGUMENT` for a reserved key. */
export function redisSemaphoreKeys(keyPrefix: string, key: string): RedisSemaphoreKeys {
  const name = keyPrefix + key;
  if (RESERVED_KEY_PATTERN.test(name)) {
    throw new LockRangeError('key', `semaphore key "${name}" is reserved: keys of the form {<tag>}fencelock:… hold fencelock's side keys`);
  }
  const header = `{${hashTagForSlot(hashSlot(name))}}fencelock:`;
  return { holders: `${header}sem-holders:${name}`, info: `${header}sem-info:${name}`, fence: `${header}sem-fence:${name}` };
}
