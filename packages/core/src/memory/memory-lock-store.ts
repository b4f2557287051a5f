import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { lockLostError } from '../errors.js';
import type { LockHolder, LockInfo, LockMode } from '../types.js';

/** A holder as the store keeps it. */
interface StoredHolder {
  readonly ownerId: string;
  readonly mode: LockMode;
  readonly token: bigint;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
  expiresAt: number;
  timer: NodeJS.Timeout | undefined;
}

/** An acquirer, as {@link MemoryLockStore.request} takes it (queued when it waits). */
export interface StoreRequest {
  readonly ownerId: string;
  readonly mode: LockMode;
  readonly ttlMs: number;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
  /** Called when a queued request is granted. */
  readonly grant: (token: bigint, expiresAt: number) => void;
}

type Waiter = StoreRequest;

interface KeyState {
  readonly holders: Map<string, StoredHolder>;
  readonly waiters: Waiter[];
}

/** What a grant from the store carries. */
export interface StoreGrant {
  readonly token: bigint;
  readonly expiresAt: number;
}

/**
 * The shared state behind one or more `MemoryLockProvider`s: every provider built on the same store
 * sees the same locks, like several clients of one server. Holders expire on the monotonic clock;
 * waiters are served strictly in arrival order (shared requests at the head are granted together);
 * fencing tokens come from one store-wide counter, so they increase across all keys.
 */
export class MemoryLockStore {
  // Map, not a plain object: keys such as "__proto__" must be ordinary keys.
  readonly #keys = new Map<string, KeyState>();
  #lastToken = 0n;

  /**
   * Grants at once if the key is free for `mode` and nobody queues before us; otherwise, when
   * `wait` is true, queues and resolves when granted. Returns `undefined` when busy and not waiting.
   */
  request(
    key: string,
    request: Omit<StoreRequest, 'grant'>,
    wait: boolean,
  ): { granted: StoreGrant } | { queued: Promise<StoreGrant>; cancel: () => boolean } | undefined {
    // Sweep before taking the key's state: a sweep that empties the key forgets its state, and a
    // grant recorded on a forgotten state would be invisible to the next request (a double grant).
    const existing = this.#keys.get(key);
    if (existing !== undefined) this.#sweep(key, existing);
    const state = this.#state(key);
    if (state.waiters.length === 0 && compatible(state, request.mode)) {
      return { granted: this.#grant(key, state, { ...request, grant: () => undefined }) };
    }
    if (!wait) {
      this.#forget(key, state);
      return undefined;
    }
    let waiter!: Waiter;
    const queued = new Promise<StoreGrant>((resolve) => {
      waiter = { ...request, grant: (token, expiresAt) => resolve({ token, expiresAt }) };
    });
    state.waiters.push(waiter);
    // True when the waiter left the queue; false when it had already been granted.
    const cancel = (): boolean => {
      const index = state.waiters.indexOf(waiter);
      if (index === -1) return false;
      state.waiters.splice(index, 1);
      // Leaving the queue may let the next shared waiters in.
      this.#drain(key, state);
      this.#forget(key, state);
      return true;
    };
    return { queued, cancel };
  }

  /** Extends a holder to `ttlMs` from now; false when it no longer holds (expired or released). */
  extend(key: string, ownerId: string, ttlMs: number): number | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    this.#sweep(key, state);
    const holder = state.holders.get(ownerId);
    if (holder === undefined) return undefined;
    holder.expiresAt = monotonicNow() + ttlMs;
    this.#armExpiry(key, state, holder);
    return holder.expiresAt;
  }

  /** Removes a holder; true when it still held the lock. */
  release(key: string, ownerId: string): boolean {
    const state = this.#keys.get(key);
    if (state === undefined) return false;
    this.#sweep(key, state);
    const holder = state.holders.get(ownerId);
    if (holder === undefined) return false;
    clearTimeout(holder.timer);
    state.holders.delete(ownerId);
    this.#drain(key, state);
    this.#forget(key, state);
    return true;
  }

  /**
   * Deletes `key`'s lock record as an operator deleting a key or znode on a server would: every
   * holder loses the lock at once (its signal aborts with `LOCK_LOST`, as a backend watch tells a
   * holder) and the next waiters are granted. For tests of how code copes with such a delete.
   * Returns how many holders were removed.
   */
  deleteLock(key: string): number {
    const state = this.#keys.get(key);
    if (state === undefined) return 0;
    const removed = [...state.holders.values()];
    state.holders.clear();
    for (const holder of removed) {
      clearTimeout(holder.timer);
      holder.observer.lost(lockLostError(key, 'taken-over'));
    }
    this.#drain(key, state);
    this.#forget(key, state);
    return removed.length;
  }

  /** The current holders of `key`. */
  inspect(key: string): LockInfo | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    this.#sweep(key, state);
    if (state.holders.size === 0) return undefined;
    const now = monotonicNow();
    const holders: LockHolder[] = [...state.holders.values()].map((holder) => ({
      ownerId: holder.ownerId,
      mode: holder.mode,
      fencingToken: holder.token,
      remainingMs: Math.max(0, holder.expiresAt - now),
      metadata: holder.metadata,
    }));
    return { key, holders };
  }

  /** How many keys have holders or waiters (lets tests check that nothing is left behind). */
  get size(): number {
    return this.#keys.size;
  }

  /** How many acquirers wait on `key`. */
  waiting(key: string): number {
    return this.#keys.get(key)?.waiters.length ?? 0;
  }

  #state(key: string): KeyState {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = { holders: new Map(), waiters: [] };
      this.#keys.set(key, state);
    }
    return state;
  }

  #forget(key: string, state: KeyState): void {
    if (state.holders.size === 0 && state.waiters.length === 0) this.#keys.delete(key);
  }

  #grant(key: string, state: KeyState, waiter: Waiter): StoreGrant {
    this.#lastToken += 1n;
    const holder: StoredHolder = {
      ownerId: waiter.ownerId,
      mode: waiter.mode,
      token: this.#lastToken,
      metadata: waiter.metadata,
      observer: waiter.observer,
      expiresAt: monotonicNow() + waiter.ttlMs,
      timer: undefined,
    };
    state.holders.set(holder.ownerId, holder);
    this.#armExpiry(key, state, holder);
    return { token: holder.token, expiresAt: holder.expiresAt };
  }

  #armExpiry(key: string, state: KeyState, holder: StoredHolder): void {
    clearTimeout(holder.timer);
    holder.timer = setTimeout(() => {
      this.#sweep(key, state);
      if (state.holders.get(holder.ownerId) === holder) this.#armExpiry(key, state, holder);
    }, Math.max(1, Math.ceil(holder.expiresAt - monotonicNow())));
    // An expiry timer alone must not keep a process alive.
    holder.timer.unref();
  }

  // Expiry is checked against the clock on every operation, not only by timers, so a paused
  // process sees the truth as soon as it runs again.
  #sweep(key: string, state: KeyState): void {
    const now = monotonicNow();
    let expired = false;
    for (const holder of state.holders.values()) {
      if (holder.expiresAt > now) continue;
      clearTimeout(holder.timer);
      state.holders.delete(holder.ownerId);
      holder.observer.lost(lockLostError(key, 'expired'));
      expired = true;
    }
    if (expired) {
      this.#drain(key, state);
      this.#forget(key, state);
    }
  }

  #drain(key: string, state: KeyState): void {
    while (state.waiters.length > 0) {
      const next = state.waiters[0];
      if (next === undefined || !compatible(state, next.mode)) return;
      state.waiters.shift();
      const granted = this.#grant(key, state, next);
      next.grant(granted.token, granted.expiresAt);
    }
  }
}

function compatible(state: KeyState, mode: LockMode): boolean {
  if (state.holders.size === 0) return true;
  if (mode === 'exclusive') return false;
  for (const holder of state.holders.values()) if (holder.mode === 'exclusive') return false;
  return true;
}
