import type { Wakeup } from '@fencelock/core/adapter';
import type { Cluster, Redis } from 'ioredis';
import { LocalWaiters, newLineTag, splitLengthPrefixed, withoutLineTag } from '@fencelock/redis-shared';

/**
 * The one pub/sub connection of a provider: it subscribes to the provider's own channel
 * `<channel>:<line tag>`, on which a release announces the head of the line when that head is one of
 * this provider's waiters (they register with the tag), and to the shared `<channel>` (releases
 * without a registered head, and older clients), and wakes one local waiter of the released key.
 * One connection serves any number of keys and waiters (per-lock subscriptions run out at scale),
 * and a release wakes only the process whose waiter is next, not every process that waits.
 *
 * The connection is a `duplicate()` of the provider's client, opened by the first wait (not by an
 * acquire that gets the lock at once) and closed with the provider. Messages sent while it is
 * (re)connecting are lost; waiters poll as well, so a missed message costs at most one backoff delay.
 */
export class ReleaseSubscriber {
  readonly #client: Redis | Cluster;
  readonly #channel: string;
  readonly #waiters: LocalWaiters;
  readonly #ownChannel: string;
  /** This provider's tag in the lines of waiters: random, so that providers never share a channel. */
  readonly lineTag = newLineTag();
  #connection: Redis | Cluster | undefined;
  #subscribed: Promise<void> | undefined;
  #isSubscribed = false;
  #closed = false;

  constructor(client: Redis | Cluster, channel: string) {
    this.#client = client;
    this.#channel = channel;
    this.#ownChannel = `${channel}:${this.lineTag}`;
    this.#waiters = new LocalWaiters({
      isConfirmed: () => this.#isSubscribed,
      // A failed subscription only means polling (a later wait tries again); never a rejection.
      open: () => this.#subscribe().catch(() => new Promise<void>(() => undefined)),
    });
  }

  /** Whether the subscription is confirmed by the server right now. */
  get subscribed(): boolean {
    return this.#isSubscribed;
  }

  /** How many releases were announced here so far (see {@link LocalWaiters.announcements}). */
  get announcements(): number {
    return this.#waiters.announcements;
  }

  /** A wake-up source for `lockKey` in core's `waitForGrant` (see {@link LocalWaiters.wakeup}). */
  wakeup(lockKey: string, ownerId: string, since?: number): Wakeup {
    return this.#waiters.wakeup(lockKey, ownerId, since);
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
        // One release frees one lock: the head of the line, if it waits here, is woken (see LocalWaiters).
        if (channel !== this.#channel && channel !== this.#ownChannel) return;
        const head = splitLengthPrefixed(message);
        if (head === undefined) this.#waiters.wakeOne(message);
        // An older release script names a tagged head whole: `<owner id>|<tag>`.
        else this.#waiters.wakeOne(head.rest, withoutLineTag(head.id));
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
    await connection.subscribe(this.#channel, this.#ownChannel);
    if (!this.#closed) this.#isSubscribed = true;
  }
}
