import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { lockLostError } from '../errors.js';
import { DeadlineQueue, type DeadlineEntry } from '../lifecycle/deadline-queue.js';
import type { LockHolder, LockInfo, LockMode } from '../types.js';
import { HolderSet, type SetHolder } from './holder-set.js';
import { MemorySemaphores } from './memory-semaphores.js';

/** A holder as the store keeps it; its expiry waits in the store's one deadline queue. */
class StoredHolder implements DeadlineEntry, SetHolder {
  readonly key: string;
  readonly state: KeyState;
  readonly ownerId: string;
  readonly mode: LockMode;
  readonly token: bigint;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
  expiresAt: number;
  deadlineAt = Number.POSITIVE_INFINITY;
  deadlineIndex = -1;
  holderSlot = -1;

  constructor(key: string, state: KeyState, request: Omit<StoreRequest, 'grant'>, token: bigint, expiresAt: number) {
    this.key = key;
    this.state = state;
    this.ownerId = request.ownerId;
    this.mode = request.mode;
    this.token = token;
    this.metadata = request.metadata;
    this.observer = request.observer;
    this.expiresAt = expiresAt;
  }
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
  readonly holders: HolderSet<StoredHolder>;
  readonly waiters: Waiter[];
  /** How many holders are exclusive (so that a shared request need not look at each one). */
  exclusiveHolders: number;
  /**
   * No holder expires before this (monotonic ms); it may be earlier than the first real expiry (an
   * extension moved it later), never later. Lets a sweep skip looking at each holder.
   */
  earliestExpiry: number;
  /** Empty, and kept in the map for the next request of its key (see {@link MemoryLockStore}). */
  idle: boolean;
}

// Empty key states kept for reuse before they are forgotten in bulk (never more than the busy ones).
const IDLE_KEYS_KEPT = 64;

/** What a grant from the store carries. */
export interface StoreGrant {
  readonly token: bigint;
  readonly expiresAt: number;
}

/**
 * The shared state behind one or more `MemoryLockProvider`s: every provider built on the same store
 * sees the same locks, like several clients of one server. Holders expire on the monotonic clock;
 * waiters are served strictly in arrival order (shared requests at the head are granted together);
 * fencing tokens come from one store-wide counter, so they increase across all keys. Counting
 * semaphores live beside the locks, in {@link MemoryLockStore.semaphores}.
 *
 * A key's state that empties stays in the map, idle, until idle states are many (a map entry deleted
 * and added again for every acquisition rebuilds the map's table each time); expiries share one timer.
 */
export class MemoryLockStore {
  // Map, not a plain object: keys such as "__proto__" must be ordinary keys.
  readonly #keys = new Map<string, KeyState>();
  #idle = 0;
  #lastToken = 0n;
  /**
   * The store's counting semaphores: a namespace apart from its locks (a semaphore and a lock on
   * the same key are independent), fenced by the same counter.
   */
  readonly semaphores: MemorySemaphores = new MemorySemaphores(() => (this.#lastToken += 1n));
  readonly #expiries = new DeadlineQueue<StoredHolder>((holder) => this.#expire(holder));

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
      const holder = this.#grant(key, state, request);
      return { granted: { token: holder.token, expiresAt: holder.expiresAt } };
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
    // Later than before: the key's earliest expiry stays a lower bound.
    holder.expiresAt = monotonicNow() + ttlMs;
    this.#expiries.set(holder, holder.expiresAt);
    return holder.expiresAt;
  }

  /** Removes a holder; true when it still held the lock. */
  release(key: string, ownerId: string): boolean {
    const state = this.#keys.get(key);
    if (state === undefined) return false;
    this.#sweep(key, state);
    const holder = state.holders.get(ownerId);
    if (holder === undefined) return false;
    this.#removeHolder(state, holder);
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
    const removed = [...state.holders.list()];
    for (const holder of removed) this.#removeHolder(state, holder);
    for (const holder of removed) holder.observer.lost(lockLostError(key, 'taken-over'));
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
    const holders: LockHolder[] = state.holders.list().map((holder) => ({
      ownerId: holder.ownerId,
      mode: holder.mode,
      fencingToken: holder.token,
      remainingMs: Math.max(0, holder.expiresAt - now),
      metadata: holder.metadata,
    }));
    return { key, holders };
  }

  /** How many keys (locks and semaphores) have holders or waiters (lets tests check that nothing is left behind). */
  get size(): number {
    return this.#keys.size - this.#idle + this.semaphores.size;
  }

  /** How many acquirers wait on `key`. */
  waiting(key: string): number {
    return this.#keys.get(key)?.waiters.length ?? 0;
  }

  #state(key: string): KeyState {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = { holders: new HolderSet(), waiters: [], exclusiveHolders: 0, earliestExpiry: Number.POSITIVE_INFINITY, idle: false };
      this.#keys.set(key, state);
    } else if (state.idle) {
      state.idle = false;
      this.#idle -= 1;
    }
    return state;
  }

  #forget(key: string, state: KeyState): void {
    if (state.idle || state.holders.size > 0 || state.waiters.length > 0 || this.#keys.get(key) !== state) return;
    state.idle = true;
    this.#idle += 1;
    if (this.#idle > IDLE_KEYS_KEPT && this.#idle * 2 > this.#keys.size) {
      this.#keys.forEach((candidate, candidateKey) => {
        if (candidate.idle) this.#keys.delete(candidateKey);
      });
      this.#idle = 0;
    }
  }

  #grant(key: string, state: KeyState, request: Omit<StoreRequest, 'grant'>): StoredHolder {
    this.#lastToken += 1n;
    const holder = new StoredHolder(key, state, request, this.#lastToken, monotonicNow() + request.ttlMs);
    // One holder per owner id: a second grant to the same owner replaces the first (as it always did).
    const previous = state.holders.get(holder.ownerId);
    if (previous !== undefined) this.#removeHolder(state, previous);
    state.holders.add(holder);
    if (holder.mode === 'exclusive') state.exclusiveHolders += 1;
    state.earliestExpiry = Math.min(state.earliestExpiry, holder.expiresAt);
    // An expiry alone must not keep a process alive: the queue's timer is unref'd.
    this.#expiries.set(holder, holder.expiresAt);
    return holder;
  }

  #removeHolder(state: KeyState, holder: StoredHolder): void {
    this.#expiries.delete(holder);
    state.holders.delete(holder);
    if (holder.mode === 'exclusive') state.exclusiveHolders -= 1;
    if (state.holders.size === 0) state.earliestExpiry = Number.POSITIVE_INFINITY;
  }

  // The holder's expiry came (by the clock, which the sweep reads again); a holder extended since is queued again.
  #expire(holder: StoredHolder): void {
    this.#sweep(holder.key, holder.state);
    if (holder.state.holders.get(holder.ownerId) === holder) this.#expiries.set(holder, holder.expiresAt);
  }

  // Expiry is checked against the clock on every operation, not only by timers, so a paused
  // process sees the truth as soon as it runs again.
  #sweep(key: string, state: KeyState): void {
    const now = monotonicNow();
    if (state.earliestExpiry > now) return;
    // Every expired holder leaves before any is told: a holder's loss handler may call back into the store.
    let expired: StoredHolder[] | undefined;
    let earliest = Number.POSITIVE_INFINITY;
    const holders = state.holders.list();
    for (let index = 0; index < holders.length; index += 1) {
      const holder = holders[index]!;
      if (holder.expiresAt > now) earliest = Math.min(earliest, holder.expiresAt);
      else (expired ??= []).push(holder);
    }
    state.earliestExpiry = earliest;
    if (expired === undefined) return;
    for (const holder of expired) this.#removeHolder(state, holder);
    for (const holder of expired) holder.observer.lost(lockLostError(key, 'expired'));
    this.#drain(key, state);
    this.#forget(key, state);
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
  return mode === 'shared' && state.exclusiveHolders === 0;
}
