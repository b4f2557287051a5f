import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { lockLostError } from '../errors.js';
import { DeadlineQueue, type DeadlineEntry } from '../lifecycle/deadline-queue.js';
import { HolderSet, type SetHolder } from './holder-set.js';

/** What every acquirer of a {@link HolderTable} carries. */
export interface TableRequest {
  readonly ownerId: string;
  readonly ttlMs: number;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
}

/** What a grant from a table carries. */
export interface TableGrant {
  readonly token: bigint;
  readonly expiresAt: number;
}

/** The outcome of {@link HolderTable.request}: granted, queued (with a way out), or busy. */
export type TableOutcome = { granted: TableGrant } | { queued: Promise<TableGrant>; cancel: () => boolean } | undefined;

/** A holder as a table keeps it; its expiry waits in the table's one deadline queue. */
export class TableHolder<R extends TableRequest, S extends KeyState<R, S>> implements DeadlineEntry, SetHolder {
  readonly key: string;
  readonly state: S;
  readonly request: R;
  readonly token: bigint;
  expiresAt: number;
  deadlineAt = Number.POSITIVE_INFINITY;
  deadlineIndex = -1;
  holderSlot = -1;

  constructor(key: string, state: S, request: R, token: bigint, expiresAt: number) {
    this.key = key;
    this.state = state;
    this.request = request;
    this.token = token;
    this.expiresAt = expiresAt;
  }

  get ownerId(): string {
    return this.request.ownerId;
  }
}

interface Waiter<R> {
  readonly request: R;
  readonly grant: (granted: TableGrant) => void;
}

/** The state of one key of a table; subclasses add what their admission rule counts. */
export interface KeyState<R extends TableRequest, S extends KeyState<R, S>> {
  readonly holders: HolderSet<TableHolder<R, S>>;
  readonly waiters: Waiter<R>[];
  /**
   * No holder expires before this (monotonic ms); it may be earlier than the first real expiry (an
   * extension moved it later), never later. Lets a sweep skip looking at each holder.
   */
  earliestExpiry: number;
  /** Empty, and kept in the map for the next request of its key. */
  idle: boolean;
}

// Empty key states kept for reuse before they are forgotten in bulk (never more than the busy ones).
const IDLE_KEYS_KEPT = 64;

/**
 * Holders and waiters per key, as a server keeps them: what the memory provider's locks and its
 * semaphores share. Holders expire on the monotonic clock (checked on every operation and by one
 * timer for all); waiters are served strictly in arrival order, as many from the head as the
 * subclass's admission rule lets in; a holder deleted or expired is told through its observer after
 * every removal is done; fencing tokens come from the counter the table is given.
 *
 * A key's state that empties stays in the map, idle, until idle states are many (a map entry deleted
 * and added again for every acquisition rebuilds the map's table each time).
 */
export abstract class HolderTable<R extends TableRequest, S extends KeyState<R, S>> {
  // Map, not a plain object: keys such as "__proto__" must be ordinary keys.
  readonly #keys = new Map<string, S>();
  #idle = 0;
  readonly #nextToken: () => bigint;
  readonly #expiries = new DeadlineQueue<TableHolder<R, S>>((holder) => this.#expire(holder));

  constructor(nextToken: () => bigint) {
    this.#nextToken = nextToken;
  }

  /** A new, empty state for `key`. */
  protected abstract newState(): S;
  /**
   * Called before `request` is admitted or queued on `state` (expired holders already gone); may
   * throw to refuse it, taking nothing (a state with neither holders nor waiters accepts anything).
   */
  protected prepare(_key: string, _state: S, _request: R): void {}
  /** Whether `request` may hold now beside the state's holders. */
  protected abstract admits(state: S, request: R): boolean;
  /** A holder joined `state` (after it was added to `state.holders`). */
  protected abstract added(state: S, holder: TableHolder<R, S>): void;
  /** A holder left `state` (after it was removed from `state.holders`). */
  protected abstract removed(state: S, holder: TableHolder<R, S>): void;

  /**
   * Grants at once when `admits` allows and nobody queues before; otherwise, when `wait` is true,
   * queues and resolves when granted. Returns `undefined` when busy and not waiting.
   */
  request(key: string, request: R, wait: boolean): TableOutcome {
    // Sweep before taking the key's state: a sweep that empties the key may forget its state, and a
    // grant recorded on a forgotten state would be invisible to the next request (a double grant).
    const existing = this.#keys.get(key);
    if (existing !== undefined) this.#sweep(key, existing);
    const state = this.#state(key);
    try {
      this.prepare(key, state, request);
    } catch (error) {
      this.#forget(key, state);
      throw error;
    }
    if (state.waiters.length === 0 && this.admits(state, request)) {
      const holder = this.#grant(key, state, request);
      return { granted: { token: holder.token, expiresAt: holder.expiresAt } };
    }
    if (!wait) {
      this.#forget(key, state);
      return undefined;
    }
    let waiter!: Waiter<R>;
    const queued = new Promise<TableGrant>((resolve) => {
      waiter = { request, grant: resolve };
    });
    state.waiters.push(waiter);
    // True when the waiter left the queue; false when it had already been granted.
    const cancel = (): boolean => {
      const index = state.waiters.indexOf(waiter);
      if (index === -1) return false;
      state.waiters.splice(index, 1);
      // Leaving the head may let those behind in (shared locks, smaller permit requests).
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
    // Later than before: the key's earliest expiry stays a lower bound.
    holder.expiresAt = monotonicNow() + ttlMs;
    this.#expiries.set(holder, holder.expiresAt);
    return holder.expiresAt;
  }

  /** Removes a holder; true when it still held. */
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
   * Deletes every holder of `key` as an operator deleting a key or znode on a server would: each
   * loses its hold at once (its signal aborts with `LOCK_LOST`, as a backend watch tells a holder)
   * and the next waiters are granted. Returns how many holders were removed.
   */
  deleteHolders(key: string): number {
    const state = this.#keys.get(key);
    if (state === undefined) return 0;
    const removed = [...state.holders.list()];
    for (const holder of removed) this.#removeHolder(state, holder);
    for (const holder of removed) holder.request.observer.lost(lockLostError(key, 'taken-over'));
    this.#drain(key, state);
    this.#forget(key, state);
    return removed.length;
  }

  /** The state of `key` and its current holders (expired ones removed), or `undefined` when it has none. */
  protected current(key: string): { readonly state: S; readonly holders: readonly TableHolder<R, S>[] } | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    this.#sweep(key, state);
    if (state.holders.size === 0) return undefined;
    return { state, holders: state.holders.list() };
  }

  /** How many keys have holders or waiters (lets tests check that nothing is left behind). */
  get size(): number {
    return this.#keys.size - this.#idle;
  }

  /** How many acquirers wait on `key`. */
  waiting(key: string): number {
    return this.#keys.get(key)?.waiters.length ?? 0;
  }

  #state(key: string): S {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = this.newState();
      this.#keys.set(key, state);
    } else if (state.idle) {
      state.idle = false;
      this.#idle -= 1;
    }
    return state;
  }

  #forget(key: string, state: S): void {
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

  #grant(key: string, state: S, request: R): TableHolder<R, S> {
    const holder = new TableHolder(key, state, request, this.#nextToken(), monotonicNow() + request.ttlMs);
    // One holder per owner id: a second grant to the same owner replaces the first.
    const previous = state.holders.get(holder.ownerId);
    if (previous !== undefined) this.#removeHolder(state, previous);
    state.holders.add(holder);
    this.added(state, holder);
    state.earliestExpiry = Math.min(state.earliestExpiry, holder.expiresAt);
    // An expiry alone must not keep a process alive: the queue's timer is unref'd.
    this.#expiries.set(holder, holder.expiresAt);
    return holder;
  }

  #removeHolder(state: S, holder: TableHolder<R, S>): void {
    this.#expiries.delete(holder);
    if (!state.holders.delete(holder)) return;
    this.removed(state, holder);
    if (state.holders.size === 0) state.earliestExpiry = Number.POSITIVE_INFINITY;
  }

  // The holder's expiry came (by the clock, which the sweep reads again); a holder extended since is queued again.
  #expire(holder: TableHolder<R, S>): void {
    this.#sweep(holder.key, holder.state);
    if (holder.state.holders.get(holder.ownerId) === holder) this.#expiries.set(holder, holder.expiresAt);
  }

  // Expiry is checked against the clock on every operation, not only by the timer, so a paused
  // process sees the truth as soon as it runs again.
  #sweep(key: string, state: S): void {
    const now = monotonicNow();
    if (state.earliestExpiry > now) return;
    // Every expired holder leaves before any is told: a holder's loss handler may call back into the table.
    let expired: TableHolder<R, S>[] | undefined;
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
    for (const holder of expired) holder.request.observer.lost(lockLostError(key, 'expired'));
    this.#drain(key, state);
    this.#forget(key, state);
  }

  // Grants waiters from the head while they are admitted; strict order: the head blocks those behind it.
  #drain(key: string, state: S): void {
    while (state.waiters.length > 0) {
      const next = state.waiters[0];
      if (next === undefined || !this.admits(state, next.request)) return;
      state.waiters.shift();
      const holder = this.#grant(key, state, next.request);
      next.grant({ token: holder.token, expiresAt: holder.expiresAt });
    }
  }
}
