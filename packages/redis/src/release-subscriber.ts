import type { Wakeup } from '@fencelock/core';
import type { Cluster, Redis } from 'ioredis';

interface Waiter {
  notified: boolean;
  wake: (() => void) | undefined;
}

/**
 * The one pub/sub connection of a provider: it subscribes to a single channel on which the release
 * script publishes the released lock key, and wakes one local waiter of that key. One subscription
 * serves any number of keys and waiters (per-lock subscriptions run out at scale).
 *
 * The connection is a `duplicate()` of the provider's client, opened on the first wait and closed
 * with the provider. Messages sent while it is (re)connecting are lost; waiters poll as well, so a
 * missed message costs at most one backoff delay.
 */
export class ReleaseSubscriber {
  readonly #client: Redis | Cluster;
  readonly #channel: string;
  readonly #waiters = new Map<string, Set<Waiter>>();
  #connection: Redis | Cluster | undefined;
  #subscribed: Promise<void> | undefined;
  #isSubscribed = false;
  #closed = false;

  constructor(client: Redis | Cluster, channel: string) {
    this.#client = client;
    this.#channel = channel;
  }

  /** Whether the subscription is confirmed by the server right now. */
  get subscribed(): boolean {
    return this.#isSubscribed;
  }

  /**
   * A wake-up source for `lockKey` in core's `waitForGrant`. It starts listening at once; if the
   * subscription was not yet confirmed at that point, its first `wait` resolves as soon as it is,
   * so the caller tries again with the subscription in place and no release can fall in between.
   */
  wakeup(lockKey: string): Wakeup {
    const waiter: Waiter = { notified: false, wake: undefined };
    let set = this.#waiters.get(lockKey);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(lockKey, set);
    }
    set.add(waiter);
    let confirmed = this.#isSubscribed;
    const subscribing = confirmed ? undefined : this.#subscribe();
    // A failed subscription only means polling; it is never an unhandled rejection.
    subscribing?.catch(() => undefined);
    return {
      wait: (ms, signal) =>
        new Promise<void>((resolve, reject) => {
          if (signal.aborted) {
            reject(signal.reason);
            return;
          }
          if (waiter.notified) {
            waiter.notified = false;
            resolve();
            return;
          }
          let timer: NodeJS.Timeout | undefined;
          const done = (): void => {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            waiter.wake = undefined;
            waiter.notified = false;
            resolve();
          };
          const onAbort = (): void => {
            clearTimeout(timer);
            waiter.wake = undefined;
            reject(signal.reason);
          };
          timer = setTimeout(done, ms);
          signal.addEventListener('abort', onAbort, { once: true });
          waiter.wake = done;
          if (!confirmed && subscribing !== undefined) {
            subscribing.then(() => {
              confirmed = true;
              if (waiter.wake === done) done();
            }, () => undefined);
          }
        }),
      close: () => {
        set.delete(waiter);
        if (set.size === 0 && this.#waiters.get(lockKey) === set) this.#waiters.delete(lockKey);
      },
    };
  }

  /** Closes the subscriber connection, if one was opened. */
  close(): void {
    this.#closed = true;
    this.#connection?.disconnect();
    this.#connection = undefined;
    this.#isSubscribed = false;
  }

  #subscribe(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('subscriber closed'));
    this.#subscribed ??= this.#open().catch((error: unknown) => {
      // Let a later wait try again (the server may have been down).
      this.#subscribed = undefined;
      throw error;
    });
    return this.#subscribed;
  }

  async #open(): Promise<void> {
    let connection = this.#connection;
    if (connection === undefined) {
      connection = this.#client.duplicate();
      this.#connection = connection;
      connection.on('message', (channel: string, message: string) => {
        if (channel === this.#channel) this.#notify(message);
      });
      // ioredis re-subscribes after a reconnect by itself; until then, waiters poll.
      connection.on('close', () => {
        this.#isSubscribed = false;
      });
      connection.on('ready', () => {
        if (this.#subscribed !== undefined) this.#isSubscribed = true;
      });
      connection.on('error', () => undefined);
    }
    await connection.subscribe(this.#channel);
    if (!this.#closed) this.#isSubscribed = true;
  }

  // One release frees one lock: wake one local waiter (the longest waiting), not all of them — a
  // hundred waiters in one process would otherwise send a hundred attempts per release. The others
  // are woken by the releases that follow (the winner's own, or the next holder's), and poll meanwhile.
  #notify(lockKey: string): void {
    const first = this.#waiters.get(lockKey)?.values().next().value;
    if (first === undefined) return;
    first.notified = true;
    first.wake?.();
  }
}
