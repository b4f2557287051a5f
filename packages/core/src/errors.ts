/**
 * Every failure fencelock reports is a {@link LockError} with a stable `code`.
 * Tests and callers branch on `code`, never on the message.
 */

/** The stable error codes. New codes may be added in minor versions; existing ones never change meaning. */
export const LockErrorCode = {
  /** The wait bound (`waitMs`) ran out before the lock could be taken. */
  TIMEOUT: 'LOCK_TIMEOUT',
  /** The lock was held and is known to be gone (expired, taken over, session lost, held too long). */
  LOST: 'LOCK_LOST',
  /** The caller's `AbortSignal` fired before the lock was taken. */
  ABORTED: 'LOCK_ABORTED',
  /** An argument was refused before any network call. */
  INVALID_ARGUMENT: 'LOCK_INVALID_ARGUMENT',
  /** The backend could not be reached or answered with an error. */
  BACKEND_UNAVAILABLE: 'LOCK_BACKEND_UNAVAILABLE',
  /** A quorum-based backend (Redlock) could not get a majority for a reason other than contention. */
  QUORUM_NOT_REACHED: 'LOCK_QUORUM_NOT_REACHED',
  /** The provider cannot do what was asked (see its capabilities). */
  UNSUPPORTED: 'LOCK_UNSUPPORTED',
  /** The operation needs a held lock, and this handle no longer holds one (released). */
  NOT_HELD: 'LOCK_NOT_HELD',
  /** A fencing guard refused a write whose token is older than one it has already accepted. */
  STALE_TOKEN: 'LOCK_STALE_TOKEN',
  /**
   * The backend refused the credentials or the operation: a wrong password, an unknown user, a
   * refused certificate, or an identity without the permission the operation needs. Not retried:
   * asking again with the same identity gets the same answer.
   */
  FORBIDDEN: 'LOCK_FORBIDDEN',
  /**
   * A semaphore was asked for with a `limit` other than the one its current holders agreed on. All
   * holders of a semaphore must agree on its limit: a second limit is refused, never applied.
   */
  LIMIT_MISMATCH: 'LOCK_LIMIT_MISMATCH',
  /**
   * A key the lock uses on the backend holds a value of a kind the lock cannot use, which something
   * else wrote there (Redis answers `WRONGTYPE`: an application's hash under the lock's name, or a
   * tampered side key). Not retried, since waiting does not change it, and the value is never
   * overwritten: lock another key, or remove the foreign value.
   */
  KEY_CONFLICT: 'LOCK_KEY_CONFLICT',
} as const;

/** One of the {@link LockErrorCode} values. */
export type LockErrorCode = (typeof LockErrorCode)[keyof typeof LockErrorCode];

/** Why a held lock was lost; carried by `LOCK_LOST` errors. */
export type LockLossReason =
  /** The validity deadline passed without a successful extension. */
  | 'expired'
  /** The backend says the lock is gone or owned by someone else (found on extend or by a watch). */
  | 'taken-over'
  /** The session or lease that carried the lock ended (ZooKeeper session expiry, etcd lease loss). */
  | 'session-lost'
  /** `maxHoldMs` was reached; the lock was released on purpose. */
  | 'max-hold'
  /** The provider was closed while the lock was held. */
  | 'provider-closed';

/** Extra, structured context on a {@link LockError}. */
export interface LockErrorDetails {
  /** The lock key concerned, when there is one. */
  readonly key?: string;
  /** For `LOCK_LOST`: why. */
  readonly reason?: LockLossReason;
  /** For argument errors: which argument. */
  readonly argument?: string;
  /** For quorum errors: what each node answered, in the order the nodes were configured. */
  readonly nodes?: readonly NodeOutcome[];
  /** The underlying error, if any. */
  readonly cause?: unknown;
}

/** What one node of a multi-node backend answered. */
export interface NodeOutcome {
  /** A printable name for the node, e.g. `127.0.0.1:7001`. */
  readonly node: string;
  /** `granted`: it gave us the lock; `held`: another owner has it there; `error`: it failed. */
  readonly outcome: 'granted' | 'held' | 'error';
  /** The error, for `error` outcomes. */
  readonly error?: unknown;
}

// A registry-wide symbol, so that errors thrown by a second copy of this package (two versions in
// one node_modules tree) are still recognised by `instanceof LockError` and `isLockError`.
const LOCK_ERROR_MARK = Symbol.for('fencelock.LockError');

function markLockError(error: object): void {
  Object.defineProperty(error, LOCK_ERROR_MARK, { value: true, enumerable: false });
}

/**
 * True when `value` is an error raised by fencelock (any copy of the package), optionally with the given code.
 */
export function isLockError(value: unknown, code?: LockErrorCode): value is LockError {
  if (typeof value !== 'object' || value === null) return false;
  if ((value as Record<symbol, unknown>)[LOCK_ERROR_MARK] !== true) return false;
  return code === undefined || (value as { code?: unknown }).code === code;
}

/**
 * The one error class of fencelock. `instanceof LockError` also holds for the argument errors
 * ({@link LockTypeError}, {@link LockRangeError}) and for errors from another copy of the package.
 */
export class LockError extends Error {
  /** The stable code. */
  readonly code: LockErrorCode;
  /** The key concerned, when there is one. */
  readonly key: string | undefined;
  /** For `LOCK_LOST`: why the lock was lost. */
  readonly reason: LockLossReason | undefined;
  /** For quorum errors: each node's answer. */
  readonly nodes: readonly NodeOutcome[] | undefined;

  constructor(code: LockErrorCode, message: string, details: LockErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = code === LockErrorCode.ABORTED ? 'AbortError' : 'LockError';
    this.code = code;
    this.key = details.key;
    this.reason = details.reason;
    this.nodes = details.nodes;
    markLockError(this);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return isLockError(value);
  }
}

/** A bad argument of the wrong type (`TypeError`), code `LOCK_INVALID_ARGUMENT`. */
export class LockTypeError extends TypeError {
  readonly code = LockErrorCode.INVALID_ARGUMENT;
  /** The argument that was refused, e.g. `key` or `options.ttlMs`. */
  readonly argument: string;
  constructor(argument: string, message: string) {
    super(message);
    this.name = 'LockTypeError';
    this.argument = argument;
    markLockError(this);
  }
}

/** A bad argument of the right type but out of range (`RangeError`), code `LOCK_INVALID_ARGUMENT`. */
export class LockRangeError extends RangeError {
  readonly code = LockErrorCode.INVALID_ARGUMENT;
  /** The argument that was refused, e.g. `key` or `options.ttlMs`. */
  readonly argument: string;
  constructor(argument: string, message: string) {
    super(message);
    this.name = 'LockRangeError';
    this.argument = argument;
    markLockError(this);
  }
}

/** A `LOCK_LOST` error for `key`. */
export function lockLostError(key: string, reason: LockLossReason, cause?: unknown): LockError {
  const why: Record<LockLossReason, string> = {
    expired: 'its validity ran out before it was extended',
    'taken-over': 'the backend no longer holds it for this owner',
    'session-lost': 'the session or lease that carried it ended',
    'max-hold': 'it was held for longer than maxHoldMs',
    'provider-closed': 'the provider was closed',
  };
  return new LockError(LockErrorCode.LOST, `lock "${key}" was lost: ${why[reason]}`, { key, reason, cause });
}

/** A `LOCK_ABORTED` error for `key`, keeping the signal's reason as the cause. */
export function lockAbortedError(key: string, signal: AbortSignal): LockError {
  return new LockError(LockErrorCode.ABORTED, `acquiring lock "${key}" was aborted`, {
    key,
    cause: signal.reason,
  });
}

/** A `LOCK_BACKEND_UNAVAILABLE` error wrapping whatever the client library threw. */
export function backendUnavailableError(what: string, cause: unknown, key?: string): LockError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `${what}${detail}`, { key, cause });
}

/**
 * A `LOCK_KEY_CONFLICT` error: `what` (e.g. `acquiring lock "k"`) failed because `where` (the keys it
 * names) holds a value of another kind that something else wrote. `detail` is the server's answer.
 */
export function keyConflictError(what: string, where: string, detail: string, cause?: unknown, key?: string): LockError {
  return new LockError(
    LockErrorCode.KEY_CONFLICT,
    `${what} failed: ${where} holds a value of another kind, written by something else (${detail}). It is left as it is, and waiting would not change it: remove it, or lock another key`,
    { key, cause },
  );
}

/**
 * A `LOCK_FORBIDDEN` error: `backend` refused `what` (e.g. `creating the contender node`) to this
 * identity. `detail` says what the server answered, in words that never carry a credential (callers
 * pass the server's error name, never a message that could echo what was sent).
 */
export function forbiddenError(backend: string, what: string, detail: string, cause?: unknown, key?: string): LockError {
  return new LockError(LockErrorCode.FORBIDDEN, `${backend} refused ${what}: ${detail}`, { key, cause });
}

/**
 * A `LOCK_LIMIT_MISMATCH` error: semaphore `key` is held with limit `stored`, and a call asked for
 * `requested`. Backends throw it from `acquireSemaphore` before they queue or take anything.
 */
export function limitMismatchError(key: string, stored: number, requested: number): LockError {
  return new LockError(
    LockErrorCode.LIMIT_MISMATCH,
    `semaphore "${key}" is held with limit ${stored}; this call asked for limit ${requested} (every holder must use the same limit)`,
    { key },
  );
}

/** `error` itself if it is a {@link LockError}, else a `LOCK_BACKEND_UNAVAILABLE` one wrapping it. */
export function asLockError(error: unknown, what: string, key?: string): LockError {
  return isLockError(error) ? error : backendUnavailableError(what, error, key);
}
