import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { limitMismatchError } from '../errors.js';
import type { SemaphoreInfo } from '../types.js';
import { HolderSet } from './holder-set.js';
import { HolderTable, type KeyState, type TableGrant, type TableHolder, type TableOutcome } from './holder-table.js';

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
export type SemaphoreStoreGrant = TableGrant;

interface SemaphoreState extends KeyState<SemaphoreStoreRequest, SemaphoreState> {
  /** The limit every holder and waiter agreed on; set by the first acquirer of an empty semaphore. */
  limit: number;
  /** Permits held now: the sum of the holders' permits, never above `limit`. */
  used: number;
}

type PermitHolder = TableHolder<SemaphoreStoreRequest, SemaphoreState>;

/**
 * The counting semaphores of a {@link MemoryLockStore}: a namespace apart from its locks, with the same
 * guarantees. Waiters are served strictly in arrival order (a waiter that wants more permits than are
 * free holds back later, smaller ones: no starvation), a queued waiter is granted the moment permits
 * are freed (notified, not polled), several permits are taken all at once or not at all, and holders
 * expire on the monotonic clock. Fencing tokens come from the store's one counter, so they increase
 * strictly per key (and across keys and locks).
 */
export class MemorySemaphores extends HolderTable<SemaphoreStoreRequest, SemaphoreState> {
  /**
   * Grants at once when enough permits are free and nobody queues before us; otherwise, when `wait`
   * is true, queues and resolves when granted. Returns `undefined` when busy and not waiting.
   * @throws `LOCK_LIMIT_MISMATCH` when the key's holders (or waiters) use another limit.
   */
  override request(key: string, request: SemaphoreStoreRequest, wait: boolean): TableOutcome {
    return super.request(key, request, wait);
  }

  /**
   * Deletes every holder of semaphore `key` as an operator would on a server: each loses its permits
   * at once (its signal aborts with `LOCK_LOST`), and the next waiters are granted. Returns how many
   * holders were removed.
   */
  deleteSemaphore(key: string): number {
    return this.deleteHolders(key);
  }

  /** The holders of semaphore `key` and its limit, or `undefined` when it has none. */
  inspect(key: string): SemaphoreInfo | undefined {
    const current = this.current(key);
    if (current === undefined) return undefined;
    const now = monotonicNow();
    const holders = current.holders.map((holder: PermitHolder) => ({
      ownerId: holder.ownerId,
      mode: 'semaphore' as const,
      permits: holder.request.permits,
      fencingToken: holder.token,
      remainingMs: Math.max(0, holder.expiresAt - now),
      metadata: holder.request.metadata,
    }));
    return { key, limit: current.state.limit, holders };
  }

  protected newState(): SemaphoreState {
    return { holders: new HolderSet(), waiters: [], earliestExpiry: Number.POSITIVE_INFINITY, idle: false, limit: 0, used: 0 };
  }

  // Expired holders have left already: their limit no longer binds anyone. An empty semaphore takes
  // the limit of its first acquirer.
  protected override prepare(key: string, state: SemaphoreState, request: SemaphoreStoreRequest): void {
    if (state.holders.size === 0 && state.waiters.length === 0) state.limit = request.limit;
    else if (state.limit !== request.limit) throw limitMismatchError(key, state.limit, request.limit);
  }

  protected admits(state: SemaphoreState, request: SemaphoreStoreRequest): boolean {
    return state.used + request.permits <= state.limit;
  }

  protected added(state: SemaphoreState, holder: PermitHolder): void {
    state.used += holder.request.permits;
  }

  protected removed(state: SemaphoreState, holder: PermitHolder): void {
    state.used -= holder.request.permits;
  }
}
