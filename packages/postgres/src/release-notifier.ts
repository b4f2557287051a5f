import { type AbortLike, type Wakeup, monotonicNow, waitFor } from '@fencelock/core/adapter';

/**
 * Fans the provider's release notifications (LISTEN/NOTIFY, payload: the lock id) out to the waiters
 * of this process, each subscribed to one lock id. A notification that comes between two waits is
 * kept, so a release between an attempt and the next wait is not missed.
 */
export class ReleaseNotifier {
  readonly #waiters = new Map<string, Set<() => void>>();

  /** Wakes every waiter of lock `id`. */
  notify(id: string): void {
    const waiters = this.#waiters.get(id);
    if (waiters === undefined) return;
    for (const wake of [...waiters]) wake();
  }

  /**
   * Wakes every waiter of every id: after the LISTEN was down (a new session), when any notice may
   * have been missed. A spurious wake-up costs a waiter one more try.
   */
  notifyAll(): void {
    for (const id of [...this.#waiters.keys()]) this.notify(id);
  }

  /** Calls `listener` on each notice of `id` until the returned function is called. */
  listen(id: string, listener: () => void): () => void {
    let waiters = this.#waiters.get(id);
    if (waiters === undefined) {
      waiters = new Set();
      this.#waiters.set(id, waiters);
    }
    // Each call is its own entry: the same function listening twice is told twice, and let go once each.
    const entry = (): void => listener();
    waiters.add(entry);
    return () => {
      const set = this.#waiters.get(id);
      set?.delete(entry);
      if (set?.size === 0) this.#waiters.delete(id);
    };
  }

  /** How many waiters listen, over all ids (for tests and close). */
  get size(): number {
    let count = 0;
    for (const waiters of this.#waiters.values()) count += waiters.size;
    return count;
  }

  /**
   * A wake-up source for core's `waitForGrant`, listening for lock `id` until closed. Its waits take
   * the request's `waitSignal` (an `AbortLike`), never the call's AbortSignal.
   */
  wakeup(id: string): Wakeup {
    let pending = false;
    let wake: (() => void) | undefined;
    const listener = (): void => {
      pending = true;
      wake?.();
    };
    const close = this.listen(id, listener);
    return {
      wait: async (ms: number, signal: AbortLike): Promise<void> => {
        if (!pending) {
          await waitFor({
            deadline: monotonicNow() + ms,
            signal,
            until: (resolve) => {
              wake = resolve;
              return () => {
                wake = undefined;
              };
            },
          });
        }
        pending = false;
      },
      close,
    };
  }
}
