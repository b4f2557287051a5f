import { type Wakeup, monotonicNow, waitFor } from '@fencelock/core/adapter';

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

  /** How many waiters listen, over all ids (for tests and close). */
  get size(): number {
    let count = 0;
    for (const waiters of this.#waiters.values()) count += waiters.size;
    return count;
  }

  /** A wake-up source for core's `waitForGrant`, listening for lock `id` until closed. */
  wakeup(id: string): Wakeup {
    let pending = false;
    let wake: (() => void) | undefined;
    const listener = (): void => {
      pending = true;
      wake?.();
    };
    let waiters = this.#waiters.get(id);
    if (waiters === undefined) {
      waiters = new Set();
      this.#waiters.set(id, waiters);
    }
    waiters.add(listener);
    return {
      wait: async (ms: number, signal: AbortSignal): Promise<void> => {
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
      close: (): void => {
        const set = this.#waiters.get(id);
        set?.delete(listener);
        if (set?.size === 0) this.#waiters.delete(id);
      },
    };
  }
}
