import type { Wakeup } from '@fencelock/core';
import type { Redis } from 'ioredis';
import { RELEASE_CHANNEL } from './lock-keys.js';
import type { MasterNode } from './master-node.js';
import { parseAnnouncement } from './redlock-scripts.js';

interface Waiter {
  notified: boolean;
  wake: (() => void) | undefined;
}

// Release ids remembered to drop the copies of one announcement (one per master). The copies of
// one release arrive within a round trip of each other, so the last thousand releases are plenty.
const REMEMBERED_RELEASES = 1_024;

/**
 * The release announcements of a provider's masters: one subscriber connection per master (a
 * `duplicate()` of its client), opened on the first wait and closed with the provider. Each release
 * is announced by every master that had waiters; the first copy wakes ONE local waiter of that key
 * and later copies are dropped, so a release costs one attempt, not one per master or per waiter.
 *
 * Announcements sent while a connection is down are lost on it; waiters poll as well, so a missed
 * one costs at most a backoff delay. A master that is down when the listener opens is subscribed
 * when it comes back.
 */
export class ReleaseListener {
  readonly #masters: readonly MasterNode[];
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #recent = new Set<string>();
  #connections: Redis[] | undefined;
  #subscribed: Promise<void> | undefined;
  #isSubscribed = false;
  #closed = false;

  constructor(masters: readonly MasterNode[]) {
    this.#masters = masters;
  }

  /**
   * A wake-up source for `lockKey` in core's `waitForGrant`. The waiter is registered at once (an
   * announcement that comes before its first wait is kept for it); the subscriber connections are
   * opened by the first wait of any waiter, not before: an acquire that gets the lock at once (the
   * common case) opens none. A wait that finds no subscription confirmed yet ends as soon as one is,
   * so the caller tries again with a subscription in place and no release can fall in between.
   */
  wakeup(lockKey: string): Wakeup {
    const waiter: Waiter = { notified: false, wake: undefined };
    let set = this.#waiters.get(lockKey);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(lockKey, set);
    }
    set.add(waiter);
    let confirmed = false;
    return {
      wait: (ms, signal) =>
        new Promise<void>((resolve, reject) => {
          confirmed ||= this.#isSubscribed;
          const subscribing = confirmed ? undefined : this.#subscribe();
          if (signal.aborted) {
            reject(signal.reason);
            return;
          }
          if (waiter.notified) {
            waiter.notified = false;
            resolve();
            return;
          }
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
          const timer = setTimeout(done, ms);
          signal.addEventListener('abort', onAbort, { once: true });
          waiter.wake = done;
          if (!confirmed && subscribing !== undefined) {
            void subscribing.then(() => {
              confirmed = true;
              if (waiter.wake === done) done();
            });
          }
        }),
      close: () => {
        set.delete(waiter);
        if (set.size === 0 && this.#waiters.get(lockKey) === set) this.#waiters.delete(lockKey);
      },
    };
  }

  /** Closes the subscriber connections, if they were opened. */
  close(): void {
    this.#closed = true;
    for (const connection of this.#connections ?? []) connection.disconnect();
    this.#connections = undefined;
    this.#isSubscribed = false;
  }

  /** Resolves when the first master confirms the subscription (never rejects; may never resolve). */
  #subscribe(): Promise<void> {
    if (this.#subscribed !== undefined || this.#closed) return this.#subscribed ?? new Promise<void>(() => undefined);
    let confirm: () => void = () => undefined;
    this.#subscribed = new Promise<void>((resolve) => {
      confirm = resolve;
    });
    const onConfirmed = (): void => {
      if (this.#closed) return;
      this.#isSubscribed = true;
      confirm();
    };
    this.#connections = this.#masters.map((master) => {
      // Unlike the request connections (which fail fast while a master is down), a subscriber keeps
      // reconnecting; it subscribes on every `ready` itself, because ioredis's own re-subscription
      // after a reconnect leaves a rejected promise unhandled when the connection closes again.
      const connection = master.client.duplicate({ autoResubscribe: false, lazyConnect: false });
      connection.on('error', () => undefined);
      connection.on('ready', () => {
        connection.subscribe(RELEASE_CHANNEL).then(onConfirmed, () => undefined);
      });
      connection.on('message', (channel: string, message: string) => {
        if (channel === RELEASE_CHANNEL) this.#announced(message);
      });
      return connection;
    });
    return this.#subscribed;
  }

  // The first copy of a release wakes the longest-waiting local waiter of its key; the others are
  // woken by the releases that follow (the winner's own) and poll meanwhile.
  #announced(message: string): void {
    const announcement = parseAnnouncement(message);
    if (announcement === undefined || this.#recent.has(announcement.releaseId)) return;
    this.#recent.add(announcement.releaseId);
    if (this.#recent.size > REMEMBERED_RELEASES) {
      const oldest = this.#recent.values().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
    const first = this.#waiters.get(announcement.lockKey)?.values().next().value;
    if (first === undefined) return;
    first.notified = true;
    first.wake?.();
  }
}
