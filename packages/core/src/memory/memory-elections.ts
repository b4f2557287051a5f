import type { GrantObserver } from '../backend.js';
import type { LockError } from '../errors.js';
import type { LeaderInfo } from '../types.js';
import { MemoryLockStore, type StoreGrant } from './memory-lock-store.js';

/** A campaigner, as {@link MemoryElections.request} takes it. */
export interface ElectionStoreRequest {
  readonly ownerId: string;
  /** Who the campaigner is; reported by {@link MemoryElections.leader} while it leads. */
  readonly value: string;
  readonly ttlMs: number;
  readonly observer: GrantObserver;
}

// The elections of each store: a namespace beside its locks and semaphores, made on first use, and
// gone with the store.
const electionsByStore = new WeakMap<MemoryLockStore, MemoryElections>();

/**
 * The leader elections of a {@link MemoryLockStore}: a namespace apart from its locks and semaphores
 * (an election, a lock and a semaphore of the same name are independent). An election is an
 * exclusive lock of a lock store of its own, the leader its holder: campaigners queue in arrival
 * order, a leader lives by its TTL and is extended like a lock, and the term is the lock's fencing
 * token, from that store's one counter, so terms only ever increase. Watchers of a name are told
 * whenever its leader may have changed: an election, a resignation, an expiry, a deletion.
 *
 * Every provider built on the same store sees the same elections (get them with {@link MemoryElections.of}).
 */
export class MemoryElections {
  // Elections are locks of their own store: nothing of them can touch the user's locks.
  readonly #leaders = new MemoryLockStore();
  // Map, not a plain object: names such as "__proto__" must be ordinary keys.
  readonly #watchers = new Map<string, Set<() => void>>();

  /** The elections of `store`, shared by every provider built on it. */
  static of(store: MemoryLockStore): MemoryElections {
    let elections = electionsByStore.get(store);
    if (elections === undefined) {
      elections = new MemoryElections();
      electionsByStore.set(store, elections);
    }
    return elections;
  }

  /**
   * Elects the campaigner at once if nobody leads and nobody queues before it; otherwise, when `wait`
   * is true, queues it and resolves when it is elected. Returns `undefined` when another leads and
   * it does not wait. The grant's token is the term.
   */
  request(
    name: string,
    request: ElectionStoreRequest,
    wait: boolean,
  ): { granted: StoreGrant } | { queued: Promise<StoreGrant>; cancel: () => boolean } | undefined {
    const observer = this.#watched(name, request.observer);
    const outcome = this.#leaders.request(
      name,
      { ownerId: request.ownerId, mode: 'exclusive', ttlMs: request.ttlMs, metadata: request.value, observer },
      wait,
    );
    if (outcome === undefined) return undefined;
    if ('granted' in outcome) {
      this.#changed(name);
      return outcome;
    }
    // Elected later, when the leader before it leaves: the store grants it then, and watchers hear of it.
    void outcome.queued.then(() => this.#changed(name));
    return outcome;
  }

  /** Extends a leader's TTL to `ttlMs` from now; `undefined` when it no longer leads. */
  extend(name: string, ownerId: string, ttlMs: number): number | undefined {
    return this.#leaders.extend(name, ownerId, ttlMs);
  }

  /** Resigns: true when `ownerId` still led. The next campaigner in line is elected at once. */
  release(name: string, ownerId: string): boolean {
    const released = this.#leaders.release(name, ownerId);
    if (released) this.#changed(name);
    return released;
  }

  /** The current leader of `name`, or `undefined`. */
  leader(name: string): LeaderInfo | undefined {
    const holder = this.#leaders.inspect(name)?.holders[0];
    if (holder === undefined) return undefined;
    return { name, value: holder.metadata ?? '', term: holder.fencingToken };
  }

  /**
   * Calls `onChange` whenever the leader of `name` may have changed, until `signal` aborts. The calls
   * come synchronously, from inside the change: a watcher must only take note and read later.
   */
  watch(name: string, onChange: () => void, signal: AbortSignal): void {
    if (signal.aborted) return;
    let set = this.#watchers.get(name);
    if (set === undefined) {
      set = new Set();
      this.#watchers.set(name, set);
    }
    // Each watch is its own entry: the same function watched twice is told twice, and unwatched once each.
    const entry = (): void => onChange();
    set.add(entry);
    signal.addEventListener(
      'abort',
      () => {
        set.delete(entry);
        if (set.size === 0 && this.#watchers.get(name) === set) this.#watchers.delete(name);
      },
      { once: true },
    );
  }

  /**
   * Removes the leader of `name` as an operator deleting its record on a server would: it loses
   * leadership at once (its signal aborts with `LOCK_LOST`), and the next campaigner is elected.
   * For tests of how code copes with a lost leadership. Returns how many leaders were removed.
   */
  deleteLeader(name: string): number {
    const removed = this.#leaders.deleteLock(name);
    if (removed > 0) this.#changed(name);
    return removed;
  }

  /** How many campaigners wait to lead `name` (its leader not counted). */
  waiting(name: string): number {
    return this.#leaders.waiting(name);
  }

  /** How many elections have a leader or campaigners (lets tests check that nothing is left behind). */
  get size(): number {
    return this.#leaders.size;
  }

  /** How many watches are in place, over every name (lets tests check that observers let go). */
  get watchers(): number {
    let count = 0;
    for (const set of this.#watchers.values()) count += set.size;
    return count;
  }

  // A leader that expires or is deleted is lost through its observer: the watchers hear of it too.
  #watched(name: string, observer: GrantObserver): GrantObserver {
    return {
      lost: (error: LockError) => {
        observer.lost(error);
        this.#changed(name);
      },
      uncertain: () => observer.uncertain(),
      recovered: () => observer.recovered(),
      renewed: (validUntil: number) => observer.renewed(validUntil),
    };
  }

  #changed(name: string): void {
    const set = this.#watchers.get(name);
    if (set === undefined) return;
    for (const onChange of [...set]) {
      try {
        onChange();
      } catch (error) {
        // A failing watcher must not break the election it watches: report it where uncaught errors go.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
