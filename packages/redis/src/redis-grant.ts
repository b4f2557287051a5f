import type { BackendGrant, GrantObserver, Slotted } from '@fencelock/core/adapter';
import type { RedisLockKeys } from './redis-keys.js';

/** What a grant asks of the backend that made it. */
export interface GrantingBackend {
  /** Prolongs `grant` to `ttlMs` and resolves its new monotonic deadline (see `BackendGrant.extend`). */
  extendLock(grant: RedisGrant, ttlMs: number): Promise<number>;
  /** Deletes `grant`'s lock if it still holds it (see `BackendGrant.release`). */
  releaseLock(grant: RedisGrant): Promise<boolean>;
}

/**
 * A lock the backend granted: the grant core holds and, until it ends, one of the backend's active
 * locks, watched across reconnects. One object with its behaviour on the prototype, where a grant
 * used to be two closures beside a record of the lock.
 */
export class RedisGrant implements BackendGrant, Slotted {
  /** The grant's place among the backend's active locks. */
  listSlot = -1;
  readonly key: string;
  readonly keys: RedisLockKeys;
  readonly ownerId: string;
  readonly observer: GrantObserver;
  readonly fencingToken: bigint;
  readonly validUntil: number;
  readonly provisional: boolean;
  readonly #backend: GrantingBackend;

  constructor(
    backend: GrantingBackend,
    request: { readonly key: string; readonly ownerId: string; readonly observer: GrantObserver },
    keys: RedisLockKeys,
    fencingToken: bigint,
    validUntil: number,
    provisional = false,
  ) {
    this.#backend = backend;
    this.key = request.key;
    this.keys = keys;
    this.ownerId = request.ownerId;
    this.observer = request.observer;
    this.fencingToken = fencingToken;
    this.validUntil = validUntil;
    this.provisional = provisional;
  }

  extend(ttlMs: number): Promise<number> {
    return this.#backend.extendLock(this, ttlMs);
  }

  release(): Promise<boolean> {
    return this.#backend.releaseLock(this);
  }
}
