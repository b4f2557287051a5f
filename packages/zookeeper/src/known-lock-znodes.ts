/**
 * The lock znodes this provider has created a contender node under. The first acquire on a lock the
 * provider does not know sends the lock znode's create ahead of its own (in the same write); a known
 * lock's znode exists, so its acquire sends no such create. A wrong belief costs one request either
 * way (a create answered NODE_EXISTS, or our create answered NO_NODE and sent again), never a wrong
 * answer. Memory is bounded (`MAX_LOCKS` locks, least recently used dropped first).
 */

// Enough for every lock a busy process cycles through; the oldest is dropped beyond it.
const MAX_LOCKS = 1_024;

/** Lock znodes one provider has used (internal). */
export class KnownLockZnodes {
  // A set's order is insertion order: re-inserting on use makes it least recently used first.
  readonly #paths = new Set<string>();

  /** True once this provider created a node under `lockPath` (and has not forgotten it since). */
  knows(lockPath: string): boolean {
    return this.#paths.has(lockPath);
  }

  /** This provider just created a node under `lockPath`. */
  record(lockPath: string): void {
    this.#paths.delete(lockPath);
    this.#paths.add(lockPath);
    if (this.#paths.size > MAX_LOCKS) {
      const oldest = this.#paths.values().next();
      if (oldest.done !== true) this.#paths.delete(oldest.value);
    }
  }

  /** Forgets `lockPath` (its znode was removed). */
  forget(lockPath: string): void {
    this.#paths.delete(lockPath);
  }
}
