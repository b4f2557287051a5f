import { monotonicNow, waitFor, type Wakeup } from '@fencelock/core/adapter';

interface Waiter {
  /** The owner id its backend attempts register under, if the announcements name heads of line. */
  readonly ownerId: string | undefined;
  notified: boolean;
  /** A direct grant announced for it and not yet taken (see {@link DirectGrant}). */
  grant: DirectGrant | undefined;
  wake: (() => void) | undefined;
}

/**
 * A release that granted the lock to a waiter in the release script itself (see the release script
 * of `@fencelock/redis`): the attempt whose registration it used (its ask names it) and the token.
 */
export interface DirectGrant {
  /** The number of the waiter's attempt whose ask the release used. */
  readonly attempt: number;
  /** The fencing token the release handed out, a decimal string. */
  readonly token: string;
}

/** A {@link Wakeup} that also hands over a direct grant announced for its waiter. */
export interface GrantWakeup extends Wakeup {
  /** The direct grant announced for this waiter since the last call, if any; taken once. */
  takeGrant(): DirectGrant | undefined;
}

// Announcements remembered for waiters that register after their first attempt (see `wakeup`).
const RECENT_ANNOUNCEMENTS = 64;

/** The subscription that brings release messages, as {@link LocalWaiters} needs to know it. */
export interface ReleaseSubscription {
  /** Whether the server has confirmed the subscription. */
  isConfirmed(): boolean;
  /**
   * Opens the subscription if it is not open yet; resolves when the server has confirmed it. Never
   * rejects; may never resolve (the server is down): waiters then poll.
   */
  open(): Promise<void>;
}

/**
 * The waiters of one provider, by lock key, for adapters whose server announces releases (Redis
 * pub/sub: `@fencelock/redis` and `@fencelock/redlock`). An announcement that names the head of the
 * server's line of waiters wakes that waiter if it is here, and no one otherwise: every waiting
 * process gets the message, and only one of them should send an attempt. One that names no head
 * wakes ONE waiter of its key, the longest waiting. The others are woken by the releases that
 * follow and poll meanwhile.
 */
export class LocalWaiters {
  readonly #subscription: ReleaseSubscription;
  readonly #byKey = new Map<string, Set<Waiter>>();
  // The last announcements (lock key and head, by sequence number modulo the size), so that a waiter
  // registered after its first attempt still sees a release announced since that attempt was sent.
  readonly #recentKeys: (string | undefined)[] = new Array<string | undefined>(RECENT_ANNOUNCEMENTS);
  readonly #recentHeads: (string | undefined)[] = new Array<string | undefined>(RECENT_ANNOUNCEMENTS);
  readonly #recentGrants: (DirectGrant | undefined)[] = new Array<DirectGrant | undefined>(RECENT_ANNOUNCEMENTS);
  #announcements = 0;

  constructor(subscription: ReleaseSubscription) {
    this.#subscription = subscription;
  }

  /**
   * How many announcements came so far. An acquisition reads it before its first attempt and passes
   * it to {@link wakeup} if that attempt fails: it need not register before an attempt that most
   * often succeeds.
   */
  get announcements(): number {
    return this.#announcements;
  }

  /**
   * A wake-up source for `lockKey` in core's `waitForGrant`. The waiter is registered at once (an
   * announcement that comes before its first wait is kept for it); the subscription is opened by the
   * first wait, not before, so an acquire that gets the lock at once opens no connection. A wait
   * that finds the subscription not yet confirmed ends as soon as it is, so the caller tries again
   * with the subscription in place and no release can fall in between. With `since` (a count of
   * {@link announcements} read before the attempt that failed), an announcement since then that
   * would have woken this waiter counts as if it had been registered.
   */
  wakeup(lockKey: string, ownerId?: string, since?: number): GrantWakeup {
    const waiter: Waiter = { ownerId, notified: false, grant: undefined, wake: undefined };
    if (since !== undefined) this.#catchUp(waiter, lockKey, since);
    let set = this.#byKey.get(lockKey);
    if (set === undefined) {
      set = new Set();
      this.#byKey.set(lockKey, set);
    }
    set.add(waiter);
    let confirmed = false;
    return {
      wait: async (ms, signal) => {
        if (signal.aborted) throw signal.reason;
        confirmed ||= this.#subscription.isConfirmed();
        const confirming = confirmed ? undefined : this.#subscription.open();
        if (waiter.notified) {
          waiter.notified = false;
          return;
        }
        await waitFor<void>({
          deadline: monotonicNow() + ms,
          signal,
          until: (wake) => {
            waiter.wake = wake;
            let waiting = true;
            void confirming?.then(() => {
              confirmed = true;
              if (waiting) wake();
            });
            return () => {
              waiting = false;
              waiter.wake = undefined;
              waiter.notified = false;
            };
          },
        });
      },
      takeGrant: () => {
        const grant = waiter.grant;
        waiter.grant = undefined;
        return grant;
      },
      close: () => {
        set.delete(waiter);
        if (set.size === 0 && this.#byKey.get(lockKey) === set) this.#byKey.delete(lockKey);
      },
    };
  }

  /**
   * A release of `lockKey` was announced: wakes the local waiter registered as `head`, or with no
   * head named, the longest-waiting local waiter of the key, if any. With `grant`, the release
   * granted the lock to `head` itself: the waiter takes it with {@link GrantWakeup.takeGrant}.
   */
  wakeOne(lockKey: string, head?: string, grant?: DirectGrant): void {
    const slot = this.#announcements % RECENT_ANNOUNCEMENTS;
    this.#recentKeys[slot] = lockKey;
    this.#recentHeads[slot] = head;
    this.#recentGrants[slot] = grant;
    this.#announcements += 1;
    const waiters = this.#byKey.get(lockKey);
    if (waiters === undefined) return;
    let chosen: Waiter | undefined;
    if (head === undefined) {
      chosen = waiters.values().next().value;
    } else {
      for (const waiter of waiters) {
        if (waiter.ownerId === head) {
          chosen = waiter;
          break;
        }
      }
    }
    if (chosen === undefined) return;
    if (grant !== undefined) chosen.grant = grant;
    chosen.notified = true;
    chosen.wake?.();
  }

  /**
   * The subscription came back after its connection dropped: announcements made meanwhile are lost,
   * so every local waiter tries again now rather than at its next poll (which may be as far as the
   * holder's expiry). One attempt per waiter; those still refused wait as before.
   */
  wakeAll(): void {
    for (const waiters of this.#byKey.values()) {
      for (const waiter of waiters) {
        waiter.notified = true;
        waiter.wake?.();
      }
    }
  }

  // Counts the announcements since `since` that would have woken a waiter of `lockKey` registered
  // as its owner id, as if it had been registered then (a grant among them is kept for it); when more
  // came than are kept, as if one had (an extra attempt is all it costs).
  #catchUp(waiter: Waiter, lockKey: string, since: number): void {
    if (this.#announcements - since > RECENT_ANNOUNCEMENTS) {
      waiter.notified = true;
      return;
    }
    for (let sequence = since; sequence < this.#announcements; sequence += 1) {
      const slot = sequence % RECENT_ANNOUNCEMENTS;
      if (this.#recentKeys[slot] !== lockKey) continue;
      const head = this.#recentHeads[slot];
      if (head !== undefined && head !== waiter.ownerId) continue;
      waiter.notified = true;
      const grant = this.#recentGrants[slot];
      if (grant !== undefined && head !== undefined) waiter.grant = grant;
    }
  }
}
