/**
 * A wait on one watch notification, latched: subscribed (through the session's shared watcher) before
 * the watching read is sent, so a notification that comes before that read's reply, or before the
 * wait starts, is not missed. The wait also ends when the session changes (expiry, loss by
 * deadline, close), at the deadline, or on abort; the caller then re-reads and decides.
 */
import { type AbortLike, waitFor } from '@fencelock/core/adapter';
import type { ZooKeeperSession } from './zookeeper-session.js';

export class WatchLatch {
  readonly #session: ZooKeeperSession;
  readonly #unsubscribe: () => void;
  #woken = false;
  #onWake: (() => void) | undefined;

  /** Subscribes to notifications on `path`; call before sending the read that sets the watch. */
  constructor(session: ZooKeeperSession, path: string) {
    this.#session = session;
    this.#unsubscribe = session.watches.subscribe(path, () => {
      this.#woken = true;
      this.#onWake?.();
    });
  }

  /** Resolves on the notification (at once if it came already), a session change, the deadline, or abort. */
  async wait(deadline: number, signal: AbortLike): Promise<void> {
    await waitFor({
      deadline,
      signal,
      until: (wake) => {
        if (this.#woken) {
          wake();
          return () => undefined;
        }
        this.#onWake = wake;
        const offSession = this.#session.onChange(wake);
        return () => {
          this.#onWake = undefined;
          offSession();
        };
      },
    });
  }

  /** Unsubscribes. Idempotent. */
  stop(): void {
    this.#onWake = undefined;
    this.#unsubscribe();
  }
}
