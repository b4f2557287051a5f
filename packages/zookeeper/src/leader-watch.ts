/**
 * The watch behind `watchLeader`: a children watch on an election's latch znode, so that every
 * candidate created or deleted (a new leader, a resignation, an expiry, a deleted node) is heard
 * within one notification. Spurious calls are harmless: core reads the leader after each.
 *
 * Guarantees:
 * - The subscription is made before the watching read is sent (a notification before its reply is
 *   not missed). While the latch znode does not exist, an `exists` watch waits for its creation.
 * - After each notification, `onChange` is called and the watch is set again with one read.
 * - After a reconnection within the session, `onChange` is called (node-zookeeper-client restores
 *   the watch itself; a read that failed while disconnected is sent again now).
 * - When the session ends (expiry, deadline), `onChange` is called: core's read of the leader opens
 *   a new session, and the backend hands it to {@link LeaderWatch.attach}, which sets the watch
 *   there (once connected).
 * - `stop()` lets go of every subscription. The server's watch stays until it fires (node-zookeeper-
 *   client cannot remove one) and then costs one notification.
 */
import { LockError, LockErrorCode } from '@fencelock/core/adapter';
import { Exception, type Stat } from 'node-zookeeper-client';
import { type ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

// Each round is a race with the latch znode's creation or deletion: a few are plenty.
const MAX_ARM_ROUNDS = 10;

/** A children watch on one election's latch znode, following the backend's current session (internal). */
export class LeaderWatch {
  /** Full path of the latch znode. */
  readonly path: string;
  readonly #onChange: () => void;
  #session: ZooKeeperSession | undefined;
  // What `attach` subscribed to on the current session.
  #offSession: (() => void) | undefined;
  // True while a watching read is answered and its watch has not fired yet.
  #armed = false;
  // Counts watching reads: only the answer of the latest one says the watch is set (a notification
  // may come in the same packet as an earlier read's answer, and consume its watch).
  #generation = 0;
  #stopped = false;

  constructor(path: string, onChange: () => void) {
    this.path = path;
    this.#onChange = onChange;
  }

  /** Sets the watch in `session`; rejects when it cannot (core retries with backoff). */
  async start(session: ZooKeeperSession): Promise<void> {
    this.#follow(session);
    await this.#arm(session);
  }

  /**
   * Follows `session` from now on (a new session of the backend): the watch is set there once it is
   * connected, and `onChange` is called then (a change may have happened between the sessions).
   */
  attach(session: ZooKeeperSession): void {
    if (this.#follow(session) && session.connected) this.#reconnected(session);
  }

  // Subscribes to `session`'s connections and end; false when there is nothing new to follow.
  #follow(session: ZooKeeperSession): boolean {
    if (this.#stopped || this.#session === session) return false;
    this.#detach();
    this.#session = session;
    const offConnected = session.onConnected(() => this.#reconnected(session));
    const offChange = session.onChange(() => {
      if (session.alive || this.#session !== session) return;
      // The session is gone and its watches with it: core's read of the leader opens the next one.
      this.#detach();
      this.#changed();
    });
    this.#offSession = () => {
      offConnected();
      offChange();
    };
    return true;
  }

  /** Lets go of everything. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#detach();
  }

  /** @internal Called by the session's watcher with a notification for {@link path}. */
  notified(): void {
    this.#armed = false;
    if (this.#stopped) return;
    this.#changed();
    const session = this.#session;
    if (session !== undefined) this.#rearm(session);
  }

  #detach(): void {
    this.#offSession?.();
    this.#offSession = undefined;
    this.#session?.watches.remove(this.path, this);
    this.#session = undefined;
    this.#armed = false;
  }

  #reconnected(session: ZooKeeperSession): void {
    if (this.#stopped || this.#session !== session) return;
    if (!this.#armed) this.#rearm(session);
    this.#changed();
  }

  #changed(): void {
    try {
      this.#onChange();
    } catch (error) {
      // A failing listener must not break the watch: report it where uncaught errors go.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  // A failure waits for the next connection of the session (a lost connection, or a silent server
  // whose socket the session drops) or for the next session.
  #rearm(session: ZooKeeperSession): void {
    this.#arm(session).catch(() => undefined);
  }

  async #arm(session: ZooKeeperSession): Promise<void> {
    this.#generation += 1;
    const generation = this.#generation;
    for (let round = 0; round < MAX_ARM_ROUNDS; round += 1) {
      if (this.#stopped || this.#session !== session) return;
      // Subscribed before the watching read is sent: a notification before its reply is not missed.
      session.watches.add(this.path, this);
      try {
        await session.request<string[]>('watching the election candidates', (done) =>
          session.listChildren(this.path, session.watches.watcher, (error, list) => done(error, list ?? [])),
        );
        if (generation === this.#generation) this.#armed = true;
        return;
      } catch (error) {
        if (zooKeeperCode(error) !== Exception.NO_NODE) throw error;
      }
      // No latch znode (no candidate yet, or it was removed when emptied): wait for its creation.
      const stat = await session.request<Stat | null>('watching the election znode', (done) =>
        session.client.exists(this.path, session.watches.watcher, (error, value) => done(error, value ?? null)),
      );
      if (stat === null) {
        if (generation === this.#generation) this.#armed = true;
        return;
      }
      // Created between the two reads: its children can be watched now.
    }
    throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `the znode ${this.path} kept being created and deleted while it was watched`);
  }
}
