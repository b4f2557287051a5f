/**
 * The EPHEMERAL_SEQUENTIAL node one attempt creates under a parent (a lock's contender node, a
 * semaphore's lease node), named with the attempt's unique prefix so that it can be found again.
 *
 * - A create whose outcome is unknown (connection loss, no reply in time, an abort while it was in
 *   flight) is looked for by that prefix; a create answered after the attempt stopped waiting is
 *   kept while the attempt has no node yet, and deleted otherwise.
 * - Whatever the attempt created is deleted when it ends without a grant: at once while connected
 *   (one bounded delete, NO_NODE is success), else through core (`releaseLater`), which retries it
 *   until it is answered or the session is gone. A dead session's ephemeral nodes went with it.
 */
import { type AbortLike, type BackendAcquireRequest, LockError, LockErrorCode } from '@fencelock/core/adapter';
import { Exception } from 'node-zookeeper-client';
import { type ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

export class OwnSequentialNode {
  readonly #session: ZooKeeperSession;
  readonly #parent: string;
  readonly #guid: string;
  readonly #what: string;
  readonly #releaseLater: BackendAcquireRequest['releaseLater'];
  #name: string | undefined;
  #createUnknown = false;
  #finished = false;
  #granted = false;

  /**
   * @param parent the parent's full path
   * @param guid the unique prefix of our node's name (see `ownNodePrefix`, `leasePrefix`)
   * @param what the node, for messages ("contender node", "lease node")
   */
  constructor(session: ZooKeeperSession, parent: string, guid: string, what: string, releaseLater: BackendAcquireRequest['releaseLater']) {
    this.#session = session;
    this.#parent = parent;
    this.#guid = guid;
    this.#what = what;
    this.#releaseLater = releaseLater;
  }

  /** Our node's name, once created (or found again). */
  get name(): string | undefined {
    return this.#name;
  }

  /** The full path of the child `name` of the parent. */
  path(name: string): string {
    return `${this.#parent}/${name}`;
  }

  /** True for a child of the parent with our prefix (ours, or a create the client retried by itself). */
  isOurs(child: string): boolean {
    return child.startsWith(this.#guid);
  }

  /** The create answered with `path`: resolves our node's name. */
  created(path: string): string {
    const name = path.slice(path.lastIndexOf('/') + 1);
    this.#name = name;
    this.#createUnknown = false;
    return name;
  }

  /** A create was sent whose outcome we will not learn (aborted while in flight): cleanup looks for it. */
  createMayHaveApplied(): void {
    this.#createUnknown = true;
  }

  /**
   * After a create failed by connection loss or no reply in time: waits for the connection (within
   * the request timeout) and looks for our node by its prefix. True when it was found.
   */
  async findAfterLostReply(signal: AbortLike): Promise<boolean> {
    this.#createUnknown = true;
    await this.#session.ready(signal);
    const found = await this.#find();
    if (found === undefined) return false;
    this.#name = found;
    this.#createUnknown = false;
    return true;
  }

  /** The `late` hook of a create: a create answered after we stopped waiting for it. */
  adoptLate(path: string): void {
    const name = path.slice(path.lastIndexOf('/') + 1);
    if (this.#name === undefined && !this.#finished) {
      this.#name = name;
      this.#createUnknown = false;
      return;
    }
    // Our granted node itself (found again by its prefix before this answer came) stays.
    if (name === this.#name && this.#granted) return;
    if (name !== this.#name || this.#finished) this.removeLater(path);
  }

  /** The attempt has ended; `granted`: our node is held and handed on, so it must outlive the attempt. */
  finish(granted: boolean): void {
    this.#finished = true;
    this.#granted = granted;
  }

  /** Deletes our node (after an attempt without a grant), now while connected, else through core. */
  cleanup(): Promise<void> {
    return this.cleanupWith(() => this.#removeOwn());
  }

  /** Runs one bounded `remove` now while connected; what cannot be done now goes to core. */
  async cleanupWith(remove: () => Promise<void>): Promise<void> {
    const session = this.#session;
    if (!session.alive) return;
    if (session.connected) {
      try {
        await remove();
        return;
      } catch {
        // Handed to core below.
      }
    }
    this.#later(remove);
  }

  /** Deletes `path` (a second node of ours, a late create) through core, without waiting. */
  removeLater(path: string): void {
    if (!this.#session.alive) return;
    this.#later(() => this.remove(path));
  }

  /** One bounded delete of `path`; NO_NODE is success. Fails at once while disconnected. */
  async remove(path: string): Promise<void> {
    const session = this.#session;
    if (!session.alive) return;
    // Not queued in the client while it is disconnected: core retries with backoff instead.
    if (!session.connected) throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the ZooKeeper client is not connected');
    await session.request<null>(`deleting a ${this.#what}`, (done) =>
      session.removeNode(path, -1, (error) => done(zooKeeperCode(error) === Exception.NO_NODE ? null : error, null)),
    );
  }

  // The node lives as long as the session, which every attempt checks first: no deadline of its
  // own, so core's bound on attempts ends the retries while the session is still alive.
  #later(remove: () => Promise<void>): void {
    this.#releaseLater(remove, Number.POSITIVE_INFINITY);
  }

  /** One bounded attempt at deleting our node (found by its prefix first when the create's outcome is unknown). */
  async #removeOwn(): Promise<void> {
    if (!this.#session.alive) return;
    if (this.#name === undefined && this.#createUnknown) {
      // Requests run in order on one connection: a create sent earlier is applied before this listing.
      this.#name = await this.#find();
      if (this.#name === undefined) {
        this.#createUnknown = false;
        return;
      }
    }
    const name = this.#name;
    if (name !== undefined) await this.remove(this.path(name));
  }

  async #find(): Promise<string | undefined> {
    try {
      const children = await this.#session.request<string[]>(`looking for our ${this.#what}`, (done) =>
        this.#session.listChildren(this.#parent, undefined, (error, list) => done(error, list ?? [])),
      );
      return children.find((child) => this.isOurs(child));
    } catch (error) {
      if (zooKeeperCode(error) === Exception.NO_NODE) return undefined;
      throw error;
    }
  }
}
