import { LockRangeError } from '@fencelock/core/adapter';
import { RESERVED_KEY_PATTERN } from '@fencelock/redis-shared';
import type { RedlockKeys } from './lock-keys.js';

/**
 * Where an election lives on every master: its mutex at `{e}fencelock:redlock-elect:<keyPrefix><name>`
 * and that mutex's line of waiters and hand-off reservation beside it. The mutex key matches
 * `RESERVED_KEY_PATTERN`, which `redlockKeys` refuses as a lock key, so no lock can be taken at it,
 * and none of these kinds is a lock's: an election and a lock of the same name share nothing. The
 * name is the suffix after a fixed header, so different names give different keys. Names whose full
 * key looks like a side key are refused, as for locks.
 */
export function redlockElectionKeys(keyPrefix: string, name: string): RedlockKeys {
  const full = keyPrefix + name;
  if (RESERVED_KEY_PATTERN.test(full)) {
    throw new LockRangeError('key', `election key "${full}" is reserved: keys of the form {<tag>}fencelock:… hold fencelock's side keys`);
  }
  return {
    lock: `{e}fencelock:redlock-elect:${full}`,
    waiters: `{w}fencelock:redlock-elect-waiters:${full}`,
    reserved: `{w}fencelock:redlock-elect-handoff:${full}`,
  };
}
