import { LockRangeError } from '@fencelock/core/adapter';
import { RESERVED_KEY_PATTERN, hashSlot, hashTagForSlot } from '@fencelock/redis-shared';
import type { RedisLockKeys } from './redis-keys.js';

/**
 * Where an election lives: the lock protocol's keys, all of them side keys of the form
 * `{<tag>}fencelock:elect-<kind>:<keyPrefix><name>`, hash-tagged to the slot of `keyPrefix + name`
 * (as a lock's and a semaphore's side keys are) so that one script reaches them all on a Cluster.
 *
 * Elections are a namespace apart from locks and semaphores of the same name: even the election's
 * mutex key matches `RESERVED_KEY_PATTERN`, which `redisLockKeys` refuses as a lock key, so no lock
 * can be taken at it; and its kinds (`elect`, `elect-fence`, …) are none of a lock's (`fence`,
 * `meta`, …) or a semaphore's (`sem-…`). The kind ends at the first `:` after a brace-free header,
 * so different names give different keys. Names whose full key looks like a side key are refused,
 * as for locks and semaphores.
 */
export function redisElectionKeys(keyPrefix: string, name: string): RedisLockKeys {
  const full = keyPrefix + name;
  if (RESERVED_KEY_PATTERN.test(full)) {
    throw new LockRangeError('key', `election key "${full}" is reserved: keys of the form {<tag>}fencelock:… hold fencelock's side keys`);
  }
  const header = `{${hashTagForSlot(hashSlot(full))}}fencelock:`;
  return {
    lock: `${header}elect:${full}`,
    fence: `${header}elect-fence:${full}`,
    meta: `${header}elect-meta:${full}`,
    waiters: `${header}elect-waiters:${full}`,
    reserved: `${header}elect-handoff:${full}`,
    grants: `${header}elect-grants:${full}`,
  };
}
