import { isLockError } from './errors.js';
import type { AcquireOptions, LockHandle, LockProvider } from './types.js';

/**
 * Runs `fn` while holding `key`, and releases the lock however `fn` ends. The lock is extended
 * automatically while `fn` runs (unless `autoExtend: false`); pass `lock.signal` to the work so it
 * stops if the lock is lost, and `lock.fencingToken` to the resource.
 *
 * If the lock was lost before `fn` settled, `withLock` rejects with that `LOCK_LOST` error even when
 * `fn` succeeded: the work was not protected all the way through, and the caller must know.
 * @throws {@link LockError} as {@link LockProvider.acquire} does, or `LOCK_LOST`.
 */
export async function withLock<T>(
  provider: LockProvider,
  key: string,
  fn: (lock: LockHandle) => Promise<T> | T,
  options?: AcquireOptions,
): Promise<T> {
  const lock = await provider.acquire(key, options);
  let result: T;
  try {
    result = await fn(lock);
  } catch (error) {
    await lock.release().catch(() => false);
    throw error;
  }
  const lossReason: unknown = lock.signal.aborted ? lock.signal.reason : undefined;
  const lostBeforeEnd = !lock.isHeld() && isLockError(lossReason) && lossReason.code === 'LOCK_LOST';
  await lock.release();
  if (lostBeforeEnd) throw lossReason;
  return result;
}
