/**
 * Watches on znodes, shared by every waiter of one session.
 *
 * node-zookeeper-client keeps each watcher function it is handed, per path, until that node changes
 * (it drops duplicates of the same function only). A function per wait would pile up on a node that
 * is held for long while waits on it time out or are aborted. So the session hands the client one
 * function for every path, and that function wakes the waiters currently subscribed to the path:
 * the client then holds at most one registration per watched path, and a waiter that leaves takes
 * its subscription with it.
 */
import type { Event } from 'node-zookeeper-client';

/** The waiters on each watched path of one session (internal). */
export class NodeWatches {
  readonly #waiters = new Map<string, Set<() => void>>();

  /**
   * The one watcher function to pass to every watching read of the session. A notification consumes
   * the client's registration and the server's watch on that path: every waiter subscribed to it is
   * woken and forgotten, and sets a new watch if it still has to wait.
   */
  readonly watcher = (event: Event): void => {
    const path = event.getPath();
    const waiters = this.#waiters.get(path);
    if (waiters === undefined) return;
    this.#waiters.delete(path);
    for (const wake of waiters) wake();
  };

  /**
   * Calls `wake` at the next notification for `path`, unless the returned function is called first.
   * Subscribe before sending the watching read: a notification that arrives before its reply (from
   * a watch set earlier on the same path) then wakes the waiter rather than being missed.
   */
  subscribe(path: string, wake: () => void): () => void {
    let waiters = this.#waiters.get(path);
    if (waiters === undefined) {
      waiters = new Set();
      this.#waiters.set(path, waiters);
    }
    const joined = waiters;
    joined.add(wake);
    return () => {
      joined.delete(wake);
      if (joined.size === 0 && this.#waiters.get(path) === joined) this.#waiters.delete(path);
    };
  }
}
