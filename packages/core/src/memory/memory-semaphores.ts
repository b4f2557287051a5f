import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { limitMismatchError, lockLostError } from '../errors.js';
import { DeadlineQueue, type DeadlineEntry } from '../lifecycle/deadline-queue.js';
import type { SemaphoreInfo } from '../types.js';
import { HolderSet, type SetHolder } from './holder-set.js';

/** An acquirer of permits, as {@link MemorySemaphores.request} takes it. */
export interface SemaphoreStoreRequest {
  readonly ownerId: string;
  readonly limit: number;
  readonly permits: number;
  readonly ttlMs: number;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
}

/** What a grant of permits carries. */
export interface SemaphoreStoreGrant {
  readonly token: bigint;
  readonly expiresAt: number;
}

interface Waiter extends SemaphoreStoreRequest {
  readonly grant: (granted: SemaphoreStoreGrant) => void;
}

/** A holder of permits; its expiry waits in the table's one deadline queue. */
class PermitHolder implements DeadlineEntry, SetHolder {
  readonly key: string;
  readonly state: SemaphoreState;
  readonly ownerId: string;
  readonly permits: number;
  readonly token: bigint;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
  expiresAt: number;
  deadlineAt = Number.POSITIVE_INFINITY;
  deadlineIndex = -1;
  holderSlot = -1;

  constructor(key: string, state: SemaphoreState, request: SemaphoreStoreRequest, token: bigint, expiresAt: number) {
    this.key = key;
    this.state = state;
    this.ownerId = request.ownerId;
    this.permits = request.permits;
    this.token = token;
    this.metadata = request.metadata;
    this.observer = request.observer;
    this.expiresAt = expiresAt;
  }
}

interface SemaphoreState {
  readonly holders: HolderSet<PermitHolder>;
  readonly waiters: Waiter[];
  /** The limit every holder and waiter agreed on; set by the first acquirer of an empty semaphore. */
  readonly limit: number;
  /** Permits held now: the sum of the holders' permits, never above `limit`. */
  used: number;
}

/**
 * The counting semaphores of a {@link MemoryLockStore}: a namespace apart from its locks, with the same
 * guarantees. Waiters are served strictly in arrival order (a waiter that wants more permits than are
 * free holds back later, smaller ones: no starvation), a queued waiter is granted the moment permits
 * are freed (notified, not polled), several permits are taken all at once or not at all, and holders
 * expire on the monotonic clock. Fencing tokens come from the store's one counter, so they increase
 * strictly per key (and across keys and locks).
 */
export class MemorySemaphores {
  // Map, not a plain object: keys such as "__proto__" must be ordinary keys.
  readonly #keys = new Map<string, SemaphoreState>();
  readonly #nextToken: () => bigint;
  readonly #expiries = new DeadlineQueue<PermitHolder>((holder) => this.#expire(holder));

  /** `nextToken` is the store's counter, shared with its locks. */
  constructor(nextToken: () => bigint) {
    this.#nextToken = nextToken;
  }

  /**
   * Grants at once when enough permits are free and nobody queues before us; otherwise, when `wait`
   * is true, queues and resolves when granted. Returns `undefined` when busy and not waiting.
   * @throws `LOCK_LIMIT_MISMATCH` when the key's holders (or waiters) use another limit.
   */
  request(
    key: string,
    request: SemaphoreStoreRequest,
    wait: boolean,
  ): { granted: SemaphoreStoreGrant } | { queued: Promise<SemaphoreStoreGrant>; cancel: () => boolean } | undefined {
    // Expired holders leave first: their limit no longer binds anyone, their permits are free.
    const existing = this.#keys.get(key);
    if (existing !== undefined) this.#sweep(key, existing);
    const current = this.#keys.get(key);
    if (current !== undefined && current.limit !== request.limit) throw limitMismatchError(key, current.limit, request.limit);
    const state = current ?? { holders: new HolderSet<PermitHolder>(), waiters: [], limit: request.limit, used: 0 };
    if (state.waiters.length === 0 && state.used + request.permits <= state.limit) {
      if (current === undefined) this.#keys.set(key, state);
      return { granted: this.#grant(key, state, request) };
    }
    if (!wait) return undefined;
    let waiter!: Waiter;
    const queued = new Promise<SemaphoreStoreGrant>((resolve) => {
      waiter = { ...request, grant: resolve };
    });
    state.waiters.push(waiter);
    // True when the waiter left the queue; false when it had already been granted.
    const cancel = (): boolean => {
      const index = state.waiters.indexOf(waiter);
      if (index === -1) return false;
      state.waiters.splice(index, 1);
      // A large request that leaves the head may let smaller ones behind it in.
      this.#drain(key, state);
      this.#forget(key, state);
      return true;
    };
    return { queued, cancel };
  }

  /** Extends a holder to `ttlMs` from now; `undefined` when it no longer holds (expired or released). */
  extend(key: string, ownerId: string, ttlMs: number): number | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    this.#sweep(key, state);
    const holder = state.holders.get(ownerId);
    if (holder === undefined) return undefined;
    holder.expiresAt = monotonicNow() + ttlMs;
    this.#expiries.set(holder, holder.expiresAt);
    return holder.expiresAt;
  }

  /** Gives a holder's permits back; true when it still held them. */
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
   * Deletes every holder of semaphore `key` as an operator would on a server: each loses its permits
   * at once (its signal aborts with `LOCK_LOST`), and the next waiters are granted. Returns how many
   * holders were removed.
   */
  deleteSemaphore(key: string): number {
    const state = this.#keys.get(key);
    if (state === undefined) return 0;
    const removed = [...state.holders.list()];
    for (const holder of removed) this.#removeHolder(state, holder);
    for (const holder of removed) holder.observer.lost(lockLostError(key, 'taken-over'));
    this.#drain(key, state);
    this.#forget(key, state);
    return removed.length;
  }

  /** The holders of semaphore `key` and its limit, or `undefined` when it has none. */
  inspect(key: string): SemaphoreInfo | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    this.#sweep(key, state);
    if (state.holders.size === 0) return undefined;
    const now = monotonicNow();
    const holders = state.holders.list().map((holder) => ({
      ownerId: holder.ownerId,
      mode: 'semaphore' as const,
      permits: holder.permits,
      fencingToken: holder.token,
      remainingMs: Math.max(0, holder.expiresAt - now),
      metadata: holder.metadata,
    }));
    return { key, limit: state.limit, holders };
  }

  /** How many semaphore keys have holders or waiters (lets tests check that nothing is left behind). */
  get size(): number {
    return this.#keys.size;
  }

  /** How many acquirers wait on semaphore `key`. */
  waiting(key: string): number {
    return this.#keys.get(key)?.waiters.length ?? 0;
  }

  #grant(key: string, state: SemaphoreState, request: SemaphoreStoreRequest): PermitHolder {
    const holder = new PermitHolder(key, state, request, this.#nextToken(), monotonicNow() + request.ttlMs);
    // One holder per owner id: a second grant to the same owner replaces the first (as for locks).
    const previous = state.holders.get(holder.ownerId);
    if (previous !== undefined) this.#removeHolder(state, previous);
    state.holders.add(holder);
    state.used += holder.permits;
    this.#expiries.set(holder, holder.expiresAt);
    return holder;
  }

  #removeHolder(state: SemaphoreState, holder: PermitHolder): void {
    this.#expiries.delete(holder);
    if (state.holders.delete(holder)) state.used -= holder.permits;
  }

  // The queue found a holder's expiry due (the sweep reads the clock again); one extended since is queued again.
  #expire(holder: PermitHolder): void {
    this.#sweep(holder.key, holder.state);
    if (holder.state.holders.get(holder.ownerId) === holder) this.#expiries.set(holder, holder.expiresAt);
  }

  // Expiry is checked against the clock on every operation, not only by the timer, so a paused
  // process sees the truth as soon as it runs again.
  #sweep(key: string, state: SemaphoreState): void {
    const now = monotonicNow();
    const expired = state.holders.list().filter((holder) => holder.expiresAt <= now);
    if (expired.length === 0) return;
    // Every expired holder leaves before any is told: a holder's loss handler may call back into the table.
    for (const holder of expired) this.#removeHolder(state, holder);
    for (const holder of expired) holder.observer.lost(lockLostError(key, 'expired'));
    this.#drain(key, state);
    this.#forget(key, state);
  }

  // Grants waiters from the head while their permits fit; strict order: the head blocks those behind it.
  #drain(key: string, state: SemaphoreState): void {
    while (state.waiters.length > 0) {
      const next = state.waiters[0];
      if (next === undefined || state.used + next.permits > state.limit) return;
      state.waiters.shift();
      const holder = this.#grant(key, state, next);
      next.grant({ token: holder.token, expiresAt: holder.expiresAt });
    }
  }

  // A semaphore without holders or waiters is forgotten: its limit binds nobody any more.
  #forget(key: string, state: SemaphoreState): void {
    if (state.holders.size === 0 && state.waiters.length === 0 && this.#keys.get(key) === state) this.#keys.delete(key);
  }
}
