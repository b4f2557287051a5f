/**
 * The watch on one of our own contender nodes: how a held lock hears at once that its node was
 * deleted behind its back (an operator, another tool), at no request of its own.
 *
 * Guarantees:
 * - A grant has no moment without a watch. On a free lock the watch is the child watch the acquire's
 *   listing left on the lock znode ({@link OwnNodeWatch.listChildren}, sent right behind the create):
 *   our node cannot go without that listing's children changing, so the listing costs no request of
 *   its own and the fencing token comes with the create (see `wire-requests.ts`). The first
 *   notification of the lock znode (a contender came or went, ours maybe) moves the watch to our own
 *   node with one read; that read finding no node is the loss. Otherwise (a grant after a wait, a
 *   client without CREATE2) the read that gives the czxid is the request that sets the watch (a
 *   `getData` with a watch): a delete before the read makes it answer `null` (and sets no watch at
 *   the server), a delete after it is notified.
 * - The subscription is made before the watching read is sent, and a notification that comes before
 *   anyone listens (between the read and the grant) is kept and handed to {@link OwnNodeWatch.hold}.
 * - While held: NodeDeleted calls `gone` once. Any other notification (someone wrote to our node)
 *   re-arms the watch with one read; that read finding no node, or another node than ours (another
 *   czxid), is the same loss. A re-arming read that fails (connection lost, no answer) is sent again
 *   when the session next connects.
 * - Across a reconnection within the session, node-zookeeper-client re-registers the watches it
 *   holds (SetWatches, relative to the last zxid it saw; sent in parts, see `set-watches.ts`): the
 *   server then reports a node deleted while we were away as NodeDeleted, and a node written
 *   meanwhile as NodeDataChanged.
 * - `stop()` silences it for good and is called before our own delete, so a release is not a loss.
 *   The watch itself stays at the server (node-zookeeper-client cannot remove one: ZooKeeper's
 *   removeWatches is not in its protocol) and costs one notification when our node goes (of our node
 *   or of the lock znode, whichever it is on).
 */
import { Event, Exception, type Stat } from 'node-zookeeper-client';
import { type ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

/** The czxid of a `Stat`, exactly (a signed 64-bit zxid, 8 bytes big-endian). */
export function czxidOf(stat: Stat): bigint {
  return stat.czxid.readBigInt64BE(0);
}

/**
 * The watch on one of our contender nodes (internal; see the module comment). Every held lock keeps
 * one for as long as it is held: it subscribes itself (no closure of its own) and keeps its state in
 * plain fields.
 */
export class OwnNodeWatch {
  readonly #session: ZooKeeperSession;
  // Our node's full path; undefined until its create is answered (a watch made for the listing).
  #path: string | undefined;
  // The path whose notifications we are subscribed to (our node's, or the lock znode's while its
  // child watch stands in); a notification consumes the subscription.
  #subscribedTo: string | undefined;
  // A notification that came before hold().
  #pending: Event | undefined;
  // The listing that leaves the lock znode's watch is sent and not answered yet.
  #listing = false;
  // Set by hold(): the node is our held lock's.
  #czxid: bigint | undefined;
  #gone: (() => void) | undefined;
  #offConnected: (() => void) | undefined;
  #stopped = false;

  /** @param path our node's full path; none yet for a watch made to list the lock znode before the create is answered */
  constructor(session: ZooKeeperSession, path?: string) {
    this.#session = session;
    this.#path = path;
  }

  /** Full path of our node. */
  get path(): string {
    if (this.#path === undefined) throw new Error('unreachable: the watched node has no path yet');
    return this.#path;
  }

  /** True when `path` is our node's. */
  isOn(path: string): boolean {
    return this.#path === path;
  }

  /** Our node's path, once its create is answered (for a watch made by {@link listChildren}). */
  placed(path: string): void {
    this.#path = path;
  }

  /**
   * Lists the children of `parent` (the lock znode) and leaves a child watch on it, which stands in
   * for the watch on our node until it fires. Rejects as {@link ZooKeeperSession.request} does.
   */
  listChildren(parent: string): Promise<string[]> {
    this.#subscribe(parent);
    this.#listing = true;
    const session = this.#session;
    return session.request<string[]>('listing lock contenders', (done) =>
      session.listChildren(parent, session.watches.watcher, (error, children) => {
        this.#listing = false;
        done(error, children ?? []);
      }),
    );
  }

  /**
   * Reads the node's stat and leaves a watch on it; `null` when the node does not exist (no watch is
   * left then). Rejects as {@link ZooKeeperSession.request} does.
   */
  read(): Promise<Stat | null> {
    const path = this.path;
    this.#subscribe(path);
    const { client, watches } = this.#session;
    return this.#session.request<Stat | null>('reading our lock node', (done) =>
      client.getData(path, watches.watcher, (error, _data, stat) => {
        if (zooKeeperCode(error) === Exception.NO_NODE) done(null, null);
        else done(error, stat ?? null);
      }),
    );
  }

  /**
   * From now on the node is our held lock's: its deletion calls `gone` (once). A notification that
   * came since the last read is handled now.
   */
  hold(czxid: bigint, gone: () => void): void {
    if (this.#stopped) return;
    this.#czxid = czxid;
    this.#gone = gone;
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending !== undefined) this.notified(pending);
    // Not subscribed and nothing pending: no watching read was answered. Set one now.
    else if (this.#subscribedTo === undefined) this.#rearm();
  }

  /** Silences the watch for good (release, loss, an attempt that did not hold). Idempotent. */
  stop(): void {
    this.#stopped = true;
    if (this.#subscribedTo !== undefined) this.#session.watches.remove(this.#subscribedTo, this);
    this.#subscribedTo = undefined;
    this.#offConnected?.();
    this.#offConnected = undefined;
    this.#gone = undefined;
    this.#pending = undefined;
  }

  /** @internal Called by the session's watcher with a notification for {@link path}. */
  notified(event: Event): void {
    const path = event.getPath();
    if (this.#listing && path !== this.#path && !this.#stopped) {
      // Of a watch set before our listing (another acquisition of this session, a moment ago): the
      // server sends it before the listing's answer, which shows that change and leaves the watch
      // that counts. Still subscribed.
      this.#session.watches.add(path, this);
      return;
    }
    this.#subscribedTo = undefined;
    if (this.#stopped) return;
    if (this.#gone === undefined) {
      this.#pending = event;
      return;
    }
    // The lock znode's notification says only that a contender came or went: our node is read.
    if (event.getType() === Event.NODE_DELETED && path === this.#path) this.#lose();
    else this.#rearm();
  }

  #subscribe(path: string): void {
    if (this.#stopped || this.#subscribedTo === path) return;
    if (this.#subscribedTo !== undefined) this.#session.watches.remove(this.#subscribedTo, this);
    // The request about to be sent tells the node's state from now on: an older notification is moot.
    this.#pending = undefined;
    this.#subscribedTo = path;
    this.#session.watches.add(path, this);
  }

  #rearm(): void {
    if (this.#stopped) return;
    this.read().then(
      (stat) => {
        if (this.#gone !== undefined && (stat === null || czxidOf(stat) !== this.#czxid)) this.#lose();
      },
      () => this.#rearmOnReconnect(),
    );
  }

  // Every failure of the read comes with a reconnection (connection lost; or no answer, after which
  // the session drops the silent socket) or the end of the session (its grants are lost with it).
  #rearmOnReconnect(): void {
    if (this.#stopped || this.#offConnected !== undefined || !this.#session.alive) return;
    this.#offConnected = this.#session.onConnected(() => {
      this.#offConnected?.();
      this.#offConnected = undefined;
      this.#rearm();
    });
  }

  #lose(): void {
    const gone = this.#gone;
    if (this.#stopped || gone === undefined) return;
    this.stop();
    gone();
  }
}
