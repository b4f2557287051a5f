import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import type { LockHolder, LockInfo, LockMode } from '../types.js';
import { HolderSet } from './holder-set.js';
import { HolderTable, type KeyState, type TableGrant, type TableHolder } from './holder-table.js';
import { MemorySemaphores } from './memory-semaphores.js';

/** An acquirer, as {@link MemoryLockStore.request} takes it. */
export interface StoreRequest {
  readonly ownerId: string;
  readonly mode: LockMode;
  readonly ttlMs: number;
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
}

/** What a grant from the store carries. */
export type StoreGrant = TableGrant;

interface LockState extends KeyState<StoreRequest, LockState> {
  /** How many holders are exclusive (so that a shared request need not look at each one). */
  exclusiveHolders: number;
}

type StoredHolder = TableHolder<StoreRequest, LockState>;

/**
 * The shared state behind one or more `MemoryLockProvider`s: every provider built on the same store
 * sees the same locks, like several clients of one server. Holders expire on the monotonic clock;
 * waiters are served strictly in arrival order (shared requests at the head are granted together);
 * fencing tokens come from one store-wide counter, so they increase across all keys. Counting
 * semaphores live beside the locks, in {@link MemoryLockStore.semaphores}.
 */
export class MemoryLockStore extends HolderTable<StoreRequest, LockState> {
  #lastToken = 0n;
  /**
   * The store's counting semaphores: a namespace apart from its locks (a semaphore and a lock on
   * the same key are independent), fenced by the same counter.
   */
  readonly semaphores: MemorySemaphores;

  constructor() {
    const nextToken = (): bigint => (this.#lastToken += 1n);
    super(nextToken);
    this.semaphores = new MemorySemaphores(nextToken);
  }

  /**
   * Deletes `key`'s lock record as an operator deleting a key or znode on a server would: every
   * holder loses the lock at once (its signal aborts with `LOCK_LOST`, as a backend watch tells a
   * holder) and the next waiters are granted. For tests of how code copes with such a delete.
   * Returns how many holders were removed.
   */
  deleteLock(key: string): number {
    return this.deleteHolders(key);
  }

  /** The current holders of `key`. */
  inspect(key: string): LockInfo | undefined {
    const current = this.current(key);
    if (current === undefined) return undefined;
    const now = monotonicNow();
    const holders: LockHolder[] = current.holders.map((holder: StoredHolder) => ({
      ownerId: holder.ownerId,
      mode: holder.request.mode,
      fencingToken: holder.token,
      remainingMs: Math.max(0, holder.expiresAt - now),
      metadata: holder.request.metadata,
    }));
    return { key, holders };
  }

  /** How many keys (locks and semaphores) have holders or waiters (lets tests check that nothing is left behind). */
  override get size(): number {
    return super.size + this.semaphores.size;
  }

  protected newState(): LockState {
    return { holders: new HolderSet(), waiters: [], earliestExpiry: Number.POSITIVE_INFINITY, idle: false, exclusiveHolders: 0 };
  }

  protected admits(state: LockState, request: StoreRequest): boolean {
    if (state.holders.size === 0) return true;
    return request.mode === 'shared' && state.exclusiveHolders === 0;
  }

  protected added(state: LockState, holder: StoredHolder): void {
    if (holder.request.mode === 'exclusive') state.exclusiveHolders += 1;
  }

  protected removed(state: LockState, holder: StoredHolder): void {
    if (holder.request.mode === 'exclusive') state.exclusiveHolders -= 1;
  }
}
