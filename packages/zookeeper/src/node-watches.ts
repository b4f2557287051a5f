/**
 * Watches on znodes, shared by every waiter of one session.
 *
 * node-zookeeper-client keeps each watcher function it is handed, per path, until that node changes
 * (it drops duplicates of the same function only). A function per wait would pile up on a node that
 * is held for long while waits on it time out or are aborted. So the session hands the client one
 * function for every path, and that function wakes the waiters currently subscribed to the path:
 * the client then holds at most one registration per watched path, and a waiter that leaves takes
 * its subscription with it.
 *
 * Every held lock is subscribed to its own node for as long as it is held (see `OwnNodeWatch`), so
 * a path with one subscriber costs one map entry and nothing else: no set, no closure.
 */
import type { Event } from 'node-zookeeper-client';

/** Something woken by a notification: a function, or an object (no closure to keep per subscriber). */
export type WatchWaiter = ((event: Event) => void) | { notified(event: Event): void };

function wake(waiter: WatchWaiter, event: Event): void {
  if (typeof waiter === 'function') waiter(event);
  else waiter.notified(event);
}

/** The waiters on each watched path of one session (internal). */
export class NodeWatches {
  // One waiter as itself; a set only when a path has several.
  readonly #waiters = new Map<string, WatchWaiter | Set<WatchWaiter>>();

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
    if (waiters instanceof Set) for (const waiter of waiters) wake(waiter, event);
    else wake(waiters, event);
  };

  /**
   * Wakes `waiter` at the next notification for `path` (then forgets it), unless {@link remove} is
   * called first. Add before sending the watching read: a notification that arrives before its reply
   * (from a watch set earlier on the same path) then wakes the waiter rather than being missed.
   */
  add(path: string, waiter: WatchWaiter): void {
    const current = this.#waiters.get(path);
    if (current === undefined) this.#waiters.set(path, waiter);
    else if (current instanceof Set) current.add(waiter);
    else if (current !== waiter) this.#waiters.set(path, new Set([current, waiter]));
  }

  /** Forgets `waiter` on `path` (nothing if a notification already did). */
  remove(path: string, waiter: WatchWaiter): void {
    const current = this.#waiters.get(path);
    if (current === waiter) this.#waiters.delete(path);
    else if (current instanceof Set) {
      current.delete(waiter);
      if (current.size === 0) this.#waiters.delete(path);
    }
  }

  /** {@link add}, with the function that does the {@link remove}. */
  subscribe(path: string, waiter: WatchWaiter): () => void {
    this.add(path, waiter);
    return () => this.remove(path, waiter);
  }
}
