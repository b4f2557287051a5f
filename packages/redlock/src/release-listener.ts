import type { Wakeup } from '@fencelock/core/adapter';
import { LocalWaiters, newLineTag, withoutLineTag, type SubscriberConnection } from '@fencelock/redis-shared';
import { RELEASE_CHANNEL } from './lock-keys.js';
import type { MasterNode } from './master-node.js';
import { quorumOf } from './quorum.js';
import { parseAnnouncement } from './redlock-scripts.js';

// Release ids remembered to count the copies of one announcement (one per master). The copies of
// one release arrive within a round trip of each other, so the last thousand releases are plenty.
const REMEMBERED_RELEASES = 1_024;

/**
 * The release announcements of a provider's masters: one subscriber connection per master (the
 * client seam's subscriber, a duplicate of its client), opened on the first wait and closed with the provider, listening on
 * the shared channel and on the provider's own (`<channel>:<line tag>`), where the masters announce
 * a head of the line that is one of this provider's waiters. Each release
 * is announced by every master that had waiters. The copy that makes a majority — when a majority of
 * masters have deleted the key, so the next attempt can be granted — wakes the waiter it names as the
 * head of the line, if that waiter is in this process; other copies are counted only. A release so
 * costs one attempt, not one per master, per process or per waiter, and that attempt does not race
 * the release on the masters that have not applied it yet (a lost race costs a round and a backoff).
 *
 * Announcements sent while a connection is down are lost on it (and a release may then never count
 * to a majority): when a master confirms its subscription again, every local waiter tries again as
 * soon as that master takes requests again (between reconnects, waiters poll as well). A master
 * that is down when the listener opens is subscribed when it comes back.
 */
export class ReleaseListener {
  readonly #masters: readonly MasterNode[];
  readonly #waiters: LocalWaiters;
  // Release id → copies of its announcement seen.
  readonly #recent = new Map<string, number>();
  readonly #quorum: number;
  #connections: SubscriberConnection[] | undefined;
  // Per master, the unsubscribe of a wake-up waiting for its request connection (see #wakeAllOnceReachable).
  readonly #pendingWakes = new Map<MasterNode, () => void>();
  #subscribed: Promise<void> | undefined;
  #isSubscribed = false;
  #closed = false;
  /** This provider's tag in the masters' lines of waiters: its heads are announced on its own channel. */
  readonly lineTag = newLineTag();
  readonly #ownChannel = `${RELEASE_CHANNEL}:${this.lineTag}`;

  constructor(masters: readonly MasterNode[]) {
    this.#masters = masters;
    this.#quorum = quorumOf(masters.length);
    this.#waiters = new LocalWaiters({
      isConfirmed: () => this.#isSubscribed,
      open: () => this.#subscribe(),
    });
  }

  /** How many releases were announced so far (see `LocalWaiters.announcements`). */
  get announcements(): number {
    return this.#waiters.announcements;
  }

  /**
   * A wake-up source for `lockKey` in core's `waitForGrant`, for the attempts registering `value`;
   * with `since` (read before the first attempt), announcements since then count (see `LocalWaiters.wakeup`).
   */
  wakeup(lockKey: string, value: string, since?: number): Wakeup {
    return this.#waiters.wakeup(lockKey, value, since);
  }

  /** Closes the subscriber connections, if they were opened. */
  close(): void {
    this.#closed = true;
    for (const off of this.#pendingWakes.values()) off();
    this.#pendingWakes.clear();
    for (const connection of this.#connections ?? []) connection.close();
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
    // Unlike the request connections (which fail fast while a master is down), a subscriber keeps
    // reconnecting and subscribing again (the seam does it for every client family).
    this.#connections = this.#masters.map((master) => {
      // Whether this master's subscription was confirmed before: a confirmation after that follows a lost connection.
      let wasConfirmed = false;
      return master.client.subscriber(
        { channels: [RELEASE_CHANNEL, this.#ownChannel] },
        {
          message: (channel, message) => {
            if (channel === RELEASE_CHANNEL || channel === this.#ownChannel) this.#announced(message);
          },
          confirmed: () => {
            onConfirmed();
            if (wasConfirmed) this.#wakeAllOnceReachable(master);
            wasConfirmed = true;
          },
          lost: () => undefined,
        },
      );
    });
    return this.#subscribed;
  }

  /**
   * `master`'s subscription is back after its connection dropped: wakes every local waiter, once the
   * master's request connection is back as well (an attempt sent before would find it down). Only the
   * latest such wait per master is kept; closing the listener ends them.
   */
  #wakeAllOnceReachable(master: MasterNode): void {
    this.#pendingWakes.get(master)?.();
    this.#pendingWakes.delete(master);
    if (this.#closed) return;
    if (master.connected) return this.#waiters.wakeAll();
    const off = master.onConnectionChange(() => {
      if (!master.connected) return;
      off();
      this.#pendingWakes.delete(master);
      if (!this.#closed) this.#waiters.wakeAll();
    });
    this.#pendingWakes.set(master, off);
  }

  // The copy of a release that makes a majority wakes the waiter it names as the head of the line,
  // if it waits here; the other copies are counted only.
  #announced(message: string): void {
    const announcement = parseAnnouncement(message);
    if (announcement === undefined) return;
    const copies = (this.#recent.get(announcement.releaseId) ?? 0) + 1;
    this.#recent.set(announcement.releaseId, copies);
    if (this.#recent.size > REMEMBERED_RELEASES) {
      const oldest = this.#recent.keys().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
    // An older release script names a tagged registration whole.
    if (copies === this.#quorum) this.#waiters.wakeOne(announcement.lockKey, withoutLineTag(announcement.waiter));
  }
}
