/**
 * The watch on one of our own contender nodes: how a held lock hears at once that its node was
 * deleted behind its back (an operator, another tool), at no request of its own.
 *
 * Guarantees:
 * - The read that gives the node's czxid (the fencing token) is the request that sets the watch (a
 *   `getData` with a watch), so a grant has no moment without one: a delete before the read makes
 *   it answer `null` (and sets no watch at the server), a delete after it is notified. The read goes
 *   out where the acquire already asked for the stat (right behind the create when the sequence
 *   number is guessed), so an acquisition costs no extra request and no extra round trip.
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
 *   removeWatches is not in its protocol) and costs one notification when our node goes.
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
  /** Full path of the watched node. */
  readonly path: string;
  readonly #session: ZooKeeperSession;
  // True while subscribed to the session's notifications for the path; a notification consumes it.
  #subscribed = false;
  // A notification that came before hold().
  #pending: Event | undefined;
  // Set by hold(): the node is our held lock's.
  #czxid: bigint | undefined;
  #gone: (() => void) | undefined;
  #offConnected: (() => void) | undefined;
  #stopped = false;

  constructor(session: ZooKeeperSession, path: string) {
    this.#session = session;
    this.path = path;
  }

  /**
   * Reads the node's stat and leaves a watch on it; `null` when the node does not exist (no watch is
   * left then). Rejects as {@link ZooKeeperSession.request} does.
   */
  read(): Promise<Stat | null> {
    this.#subscribe();
    const { client, watches } = this.#session;
    return this.#session.request<Stat | null>('reading our lock node', (done) =>
      client.getData(this.path, watches.watcher, (error, _data, stat) => {
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
    else if (!this.#subscribed) this.#rearm();
  }

  /** Silences the watch for good (release, loss, an attempt that did not hold). Idempotent. */
  stop(): void {
    this.#stopped = true;
    if (this.#subscribed) this.#session.watches.remove(this.path, this);
    this.#subscribed = false;
    this.#offConnected?.();
    this.#offConnected = undefined;
    this.#gone = undefined;
    this.#pending = undefined;
  }

  /** @internal Called by the session's watcher with a notification for {@link path}. */
  notified(event: Event): void {
    this.#subscribed = false;
    if (this.#stopped) return;
    if (this.#gone === undefined) {
      this.#pending = event;
      return;
    }
    if (event.getType() === Event.NODE_DELETED) this.#lose();
    else this.#rearm();
  }

  #subscribe(): void {
    if (this.#stopped || this.#subscribed) return;
    // The read about to be sent tells the node's state from now on: an older notification is moot.
    this.#pending = undefined;
    this.#subscribed = true;
    this.#session.watches.add(this.path, this);
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
