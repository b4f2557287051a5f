import { monotonicNow } from './clock.js';
import { LockError, LockErrorCode, LockRangeError, LockTypeError } from './errors.js';
import type { AcquireOptions, LockHandle, LockProvider } from './types.js';
import { validateKey, validateWaitMs } from './validation.js';

/** Several locks held together, released together. */
export interface LockSet extends AsyncDisposable {
  /** The handles, in acquisition order (sorted keys). */
  readonly handles: readonly LockHandle[];
  /** Aborted as soon as any of the locks is lost (its reason), or on release. */
  readonly signal: AbortSignal;
  /** Releases every lock; resolves true when all were still held. Idempotent. */
  release(): Promise<boolean>;
}

/** The most keys {@link acquireAll} takes at once. */
export const MAX_KEYS_PER_SET = 1_000;

/**
 * Acquires several keys under one deadline (`waitMs` covers the whole set). Keys are taken in one
 * fixed order (sorted by UTF-16 code units), so two callers locking overlapping sets can never deadlock.
 * If any key fails, everything taken so far is released before the error is rethrown.
 */
export async function acquireAll(
  provider: LockProvider,
  keys: readonly string[],
  options: AcquireOptions = {},
): Promise<LockSet> {
  if (!Array.isArray(keys)) throw new LockTypeError('keys', 'keys must be an array of strings');
  if (keys.length === 0 || keys.length > MAX_KEYS_PER_SET) {
    throw new LockRangeError('keys', `keys must hold between 1 and ${MAX_KEYS_PER_SET} keys, got ${keys.length}`);
  }
  keys.forEach((key, index) => validateKey(key, `keys[${index}]`));
  const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (let index = 1; index < sorted.length; index += 1) {
    if (sorted[index] === sorted[index - 1]) {
      throw new LockRangeError('keys', `keys must be distinct; "${sorted[index]}" appears twice (locks are not reentrant)`);
    }
  }
  const waitMs = options.waitMs === undefined ? undefined : validateWaitMs(options.waitMs);
  const deadline = waitMs === undefined ? undefined : monotonicNow() + waitMs;
  const handles: LockHandle[] = [];
  try {
    for (const key of sorted) {
      const remaining = deadline === undefined ? undefined : Math.max(0, deadline - monotonicNow());
      if (remaining === 0 && handles.length > 0) {
        throw new LockError(LockErrorCode.TIMEOUT, `lock set was not acquired within ${waitMs} ms (stopped at "${key}")`, { key });
      }
      handles.push(await provider.acquire(key, remaining === undefined ? options : { ...options, waitMs: remaining }));
    }
  } catch (error) {
    await Promise.all(handles.map((handle) => handle.release().catch(() => false)));
    throw error;
  }
  return lockSet(handles);
}

function lockSet(handles: readonly LockHandle[]): LockSet {
  const signal = AbortSignal.any(handles.map((handle) => handle.signal));
  let releasing: Promise<boolean> | undefined;
  const release = (): Promise<boolean> => {
    if (releasing !== undefined) return releasing.then(() => false);
    releasing = Promise.all(handles.map((handle) => handle.release())).then((held) => held.every(Boolean));
    return releasing;
  };
  return {
    handles,
    signal,
    release,
    async [Symbol.asyncDispose]() {
      await release();
    },
  };
}
