import {
  LocalWaiters,
  newLineTag,
  splitDirectGrant,
  splitLengthPrefixed,
  withoutLineTag,
  type GrantWakeup,
  type LockClient,
  type SubscriberConnection,
} from '@fencelock/redis-shared';

/**
 * The one pub/sub connection of a provider: it subscribes to the provider's own channel
 * `<channel>:<line tag>`, on which a release announces the head of the line when that head is one of
 * this provider's waiters (they register with the tag), and to the shared `<channel>` (releases
 * without a registered head, and older clients), and wakes one local waiter of the released key.
 * One connection serves any number of keys and waiters (per-lock subscriptions run out at scale),
 * and a release wakes only the process whose waiter is next, not every process that waits.
 *
 * The connection is the client seam's subscriber (a duplicate of the provider's client), opened by
 * the first wait (not by an acquire that gets the lock at once) and closed with the provider.
 * Messages sent while it is reconnecting are lost: when the server confirms the subscription again,
 * every local waiter tries again at once (between reconnects, waiters poll as well).
 */
export class ReleaseSubscriber {
  readonly #client: LockClient;
  readonly #channel: string;
  readonly #waiters: LocalWaiters;
  readonly #ownChannel: string;
  /** This provider's tag in the lines of waiters: random, so that providers never share a channel. */
  readonly lineTag = newLineTag();
  #connection: SubscriberConnection | undefined;
  #subscribed: Promise<void> | undefined;
  #isSubscribed = false;
  // Whether the subscription was ever confirmed: a confirmation after that follows a lost connection.
  #wasConfirmed = false;
  #closed = false;

  constructor(client: LockClient, channel: string) {
    this.#client = client;
    this.#channel = channel;
    this.#ownChannel = `${channel}:${this.lineTag}`;
    this.#waiters = new LocalWaiters({
      isConfirmed: () => this.#isSubscribed,
      // Never rejects; while the server is down it does not resolve, and waiters poll.
      open: () => this.#subscribe(),
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

  /**
   * A wake-up source for `lockKey` in core's `waitForGrant` (see {@link LocalWaiters.wakeup}), which
   * also hands over a lock a release granted to `ownerId` directly.
   */
  wakeup(lockKey: string, ownerId: string, since?: number): GrantWakeup {
    return this.#waiters.wakeup(lockKey, ownerId, since);
  }

  /** Closes the subscriber connection, if one was opened. */
  close(): void {
    this.#closed = true;
    this.#connection?.close();
    this.#connection = undefined;
    this.#isSubscribed = false;
  }

  #subscribe(): Promise<void> {
    if (this.#closed) return new Promise<void>(() => undefined);
    this.#subscribed ??= new Promise<void>((confirm) => {
      this.#connection = this.#client.subscriber(
        { channels: [this.#channel, this.#ownChannel] },
        {
          message: (channel, message) => {
            // One release frees one lock: the head of the line, if it waits here, is woken (see LocalWaiters).
            if (channel !== this.#channel && channel !== this.#ownChannel) return;
            // A release that granted the lock to our waiter in the script itself (on our own channel only).
            const granted = channel === this.#ownChannel ? splitDirectGrant(message) : undefined;
            if (granted !== undefined) {
              this.#waiters.wakeOne(granted.lockKey, granted.ownerId, { attempt: granted.attempt, token: granted.token });
              return;
            }
            const head = splitLengthPrefixed(message);
            if (head === undefined) this.#waiters.wakeOne(message);
            // An older release script names a tagged head whole: `<owner id>|<tag>`.
            else this.#waiters.wakeOne(head.rest, withoutLineTag(head.id));
          },
          confirmed: () => {
            if (this.#closed) return;
            this.#isSubscribed = true;
            if (this.#wasConfirmed) this.#waiters.wakeAll();
            this.#wasConfirmed = true;
            confirm();
          },
          lost: () => {
            this.#isSubscribed = false;
          },
        },
      );
    });
    return this.#subscribed;
  }
}
