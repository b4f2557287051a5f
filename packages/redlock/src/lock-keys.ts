import { LockRangeError } from '@fencelock/core/adapter';
import { RESERVED_KEY_PATTERN } from '@fencelock/redis-shared';

/** Where a Redlock lock and its line of waiters live on every master. */
export interface RedlockKeys {
  /** The lock: `keyPrefix + key`, a plain string key holding the lock value (as every Redlock client has it). */
  readonly lock: string;
  /** The waiter registry: a sorted set that exists only while someone waits. */
  readonly waiters: string;
  /** The hand-off reservation a release leaves for the registered waiters, for a moment. */
  readonly reserved: string;
}

/**
 * The keys of `key` under `keyPrefix`. The registry's name matches {@link RESERVED_KEY_PATTERN}, and
 * lock keys of that form are refused (`LOCK_INVALID_ARGUMENT`), so no lock can collide with another
 * lock's registry; the lock key is its suffix, so different locks have different registries.
 */
export function redlockKeys(keyPrefix: string, key: string): RedlockKeys {
  const lock = keyPrefix + key;
  if (RESERVED_KEY_PATTERN.test(lock)) {
    throw new LockRangeError('key', `lock key "${lock}" is reserved: keys of the form {<tag>}fencelock:… hold fencelock's side keys`);
  }
  return { lock, waiters: `{w}fencelock:redlock-waiters:${lock}`, reserved: `{w}fencelock:redlock-handoff:${lock}` };
}

/** The channel on which masters announce releases of locks someone waits for. */
export const RELEASE_CHANNEL = 'fencelock:redlock:released';
