import { LockError, LockErrorCode, LockTypeError } from './errors.js';
import { validateKey } from './validation.js';

/** A write the guard refused. */
export interface FenceRejection {
  /** The resource key. */
  readonly key: string;
  /** The token the writer presented. */
  readonly token: bigint;
  /** The highest token the guard had accepted for the key. */
  readonly highestToken: bigint;
}

/** Counters of a {@link FencingGuard}. */
export interface FencingGuardStats {
  readonly accepted: number;
  readonly rejected: number;
}

/**
 * The reference for a fenced resource: per key, it accepts a write only if its token is at least the
 * highest token it has accepted before, and counts refusals. A holder whose lock expired during a
 * pause comes back with an older token than its successor's and is refused, which no timing check on
 * the client can achieve. Real resources do the same comparison in their own transaction (see the
 * guarded-write examples); this class is for in-process resources and tests.
 */
export class FencingGuard {
  // Map, not a plain object: keys such as "__proto__" must be ordinary keys.
  readonly #highest = new Map<string, bigint>();
  readonly #listeners = new Set<(rejection: FenceRejection) => void>();
  #accepted = 0;
  #rejected = 0;

  /** Accepts (and records) `token` for `key` if it is not older than the highest accepted one. */
  check(key: string, token: bigint | undefined): boolean {
    validateKey(key);
    if (typeof token !== 'bigint') {
      throw new LockTypeError('token', 'a fencing token must be a bigint; this lock has none (its provider has fencing "none")');
    }
    const highest = this.#highest.get(key);
    if (highest !== undefined && token < highest) {
      this.#rejected += 1;
      const rejection: FenceRejection = { key, token, highestToken: highest };
      for (const listener of this.#listeners) listener(rejection);
      return false;
    }
    this.#highest.set(key, token);
    this.#accepted += 1;
    return true;
  }

  /** Like {@link check}, but throws a `LOCK_STALE_TOKEN` error when the token is refused. */
  assert(key: string, token: bigint | undefined): void {
    if (this.check(key, token)) return;
    throw new LockError(
      LockErrorCode.STALE_TOKEN,
      `write to "${key}" refused: token ${String(token)} is older than ${String(this.#highest.get(key))}`,
      { key },
    );
  }

  /** The highest token accepted for `key`, if any. */
  highestToken(key: string): bigint | undefined {
    return this.#highest.get(key);
  }

  /** How many writes were accepted and refused. */
  get stats(): FencingGuardStats {
    return { accepted: this.#accepted, rejected: this.#rejected };
  }

  /** Calls `listener` on every refusal; returns the unsubscribe function. */
  onReject(listener: (rejection: FenceRejection) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
