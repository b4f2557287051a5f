/**
 * One acquisition attempt: ZooKeeper's lock recipe with Curator's protected names. The same queue
 * serves a semaphore's mutex and an election's leader latch (Curator's `LeaderLatch` is this recipe
 * with `latch-` names: the first candidate leads, each other watches its predecessor).
 *
 * Guarantees:
 * - One EPHEMERAL_SEQUENTIAL contender node per attempt. A create whose reply was lost (connection
 *   loss, no reply in time) is found again by its unique prefix instead of being left behind, and a
 *   second node with our prefix (a create the client retried by itself) is deleted.
 * - The attempt holds the lock when no contender it must wait for precedes it (see `blockerOf`);
 *   otherwise it watches only that one predecessor (no herd effect) and re-checks when woken.
 * - On a free lock the grant costs the create and one listing, sent together: the create's reply
 *   carries our node's czxid (CREATE2, see `wire-requests.ts`) and the listing leaves the watch
 *   the grant holds (see `OwnNodeWatch`). A grant after a wait reads our node's czxid with a read
 *   that leaves a watch on it. Every other watch of ours the attempt made is stopped when it ends.
 * - Whatever the attempt created is deleted before it resolves `undefined` or rejects, including a
 *   create answered after we stopped waiting for it. What cannot be deleted now (the client is
 *   disconnected, the delete got no answer, a create's outcome is unknown) is handed to core
 *   (`request.releaseLater`), which retries it until it is answered or the session is gone.
 */
import { type AbortLike, type BackendAcquireRequest, LockError, LockErrorCode, RequestTimeoutError, monotonicNow } from '@fencelock/core/adapter';
import { CreateMode, Exception, type Stat } from 'node-zookeeper-client';
import { type QueueNaming, blockerOf, ownNodePrefix, sortedContenders } from './contender-names.js';
import type { KnownLockZnodes } from './known-lock-znodes.js';
import { createLockParentAhead, ensureLockParent } from './lock-parent.js';
import { OwnNodeWatch, czxidOf } from './own-node-watch.js';
import { OwnSequentialNode } from './own-sequential-node.js';
import { WatchLatch } from './watch-latch.js';
import { type ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

/** What a successful attempt holds. */
export interface HeldNode {
  /** Full path of our contender node. */
  readonly nodePath: string;
  /** Its czxid: the zxid of the transaction that created it (global, monotonic). */
  readonly czxid: bigint;
  /** The watch the read of that czxid left on the node, for the grant to hold. */
  readonly watch: OwnNodeWatch;
}

/** Where the attempt runs. */
export interface AttemptSettings {
  readonly session: ZooKeeperSession;
  readonly root: string;
  readonly lockPath: string;
  /** How our node is named and which children queue with it (a lock's contenders, or a latch's candidates). */
  readonly naming: QueueNaming;
  /** The lock znodes the provider has used (shared by its attempts). */
  readonly knownZnodes: KnownLockZnodes;
}

/**
 * What the create that made our node brought: the listing sent right behind it, before its reply
 * (ZooKeeper answers one session's requests in the order they were sent, so it sees our new node),
 * and the stat the create's reply carried.
 */
interface FirstReads {
  /** The lock's children, listed after our create; `undefined` when the listing failed (the first round asks again). */
  readonly children: Promise<string[] | undefined>;
  /**
   * The watch the listing left (on the lock znode), standing in for the one on our node; none when
   * the session holds a lock under that znode already (the attempt will wait).
   */
  readonly watch: OwnNodeWatch | undefined;
  /** Our node's stat; `undefined` when the client could not send CREATE2. */
  readonly stat: Stat | undefined;
}

/** A create's answer: our node's path, and its stat when the create was a CREATE2. */
interface Created {
  readonly path: string;
  readonly stat: Stat | undefined;
}

/**
 * The lock request an attempt runs on behalf of a request of another recipe (a semaphore's mutex, a
 * campaign's latch candidacy): the same key, owner (its node's uuid), deadline, signal, observer and
 * cleanup; `metadata` is written as the node's data.
 */
export function lockRequestFor(
  request: Omit<BackendAcquireRequest, 'mode' | 'metadata'>,
  metadata: string | undefined,
  contended: () => void = request.contended,
): BackendAcquireRequest {
  return {
    key: request.key,
    mode: 'exclusive',
    ownerId: request.ownerId,
    ttlMs: request.ttlMs,
    deadline: request.deadline,
    // Read only when used: reading it makes core build the call's AbortController. The recipes wait
    // on `waitSignal`, so no attempt of this adapter ever reads it.
    get signal() {
      return request.signal;
    },
    waitSignal: request.waitSignal,
    metadata,
    observer: request.observer,
    contended,
    releaseLater: (release, until) => request.releaseLater(release, until),
  };
}

// Each round is one wake-up (a watch, the deadline, a session change): far more than any real wait needs.
const MAX_ROUNDS = 100_000;
const MAX_CREATE_ATTEMPTS = 5;

/** One run of the lock recipe for one acquire request (internal; see the module comment). */
export class LockAttempt {
  readonly #settings: AttemptSettings;
  readonly #request: BackendAcquireRequest;
  readonly #prefix: string;
  readonly #node: OwnSequentialNode;
  // Every watch this attempt set (the first listing's, our node's): all but the one handed to the
  // grant are stopped when the attempt ends.
  readonly #watches: OwnNodeWatch[] = [];
  constructor(settings: AttemptSettings, request: BackendAcquireRequest) {
    this.#settings = settings;
    this.#request = request;
    const names = ownNodePrefix(settings.naming, request.ownerId, request.mode);
    this.#prefix = names.prefix;
    this.#node = new OwnSequentialNode(settings.session, settings.lockPath, names.guid, 'contender node', request.releaseLater);
  }

  /** Runs the attempt; resolves the held node, or `undefined` when the deadline passed while held by others. */
  async run(): Promise<HeldNode | undefined> {
    let held: HeldNode | undefined;
    try {
      held = await this.#acquire();
      return held;
    } finally {
      this.#node.finish(held !== undefined);
      for (const watch of this.#watches) if (watch !== held?.watch) watch.stop();
      if (held === undefined) await this.#node.cleanup();
    }
  }

  get #session(): ZooKeeperSession {
    return this.#settings.session;
  }

  // The first round's requests listen to no abort (an attempt on a free lock never waits, and a
  // listener on the call makes core listen to the caller's signal): they are bounded by the request
  // timeout, and core checks the call for an abort once the attempt is over, handing back a node it
  // got meanwhile. Later rounds listen to the call's `waitSignal`.
  async #acquire(): Promise<HeldNode | undefined> {
    const first = await this.#create();
    let contended = false;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const signal = round === 0 ? undefined : this.#request.waitSignal;
      if (signal?.aborted) throw signal.reason;
      const ours = this.#node.name;
      if (ours === undefined) throw new Error('unreachable: no contender node');
      // Round 0 without the stat from the create (no CREATE2, or our node found again after a lost
      // reply) asks for it at once, pipelined with the listing: a free lock needs it.
      let statRequest: Promise<Stat | null> | undefined;
      if (round === 0 && first?.stat === undefined) {
        statRequest = this.#ownWatch(ours).read();
        statRequest.catch(() => undefined);
      }
      const listed = round === 0 ? await first?.children : undefined;
      const children =
        listed?.includes(ours) === true
          ? listed
          : await this.#listContenders(signal);
      for (const child of children) {
        if (child !== ours && this.#node.isOurs(child)) this.#node.removeLater(this.#node.path(child));
      }
      const blocker = blockerOf(sortedContenders(children, this.#settings.naming), ours);
      if (blocker === 'missing') {
        throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `the contender node of lock "${this.#request.key}" disappeared`, {
          key: this.#request.key,
        });
      }
      if (blocker === undefined) {
        // Free at the first listing, with the create's stat: the listing's watch is the grant's.
        if (first?.stat !== undefined && first.watch !== undefined && children === listed) {
          return { nodePath: first.watch.path, czxid: czxidOf(first.stat), watch: first.watch };
        }
        const watch = this.#ownWatch(ours);
        const stat = await (statRequest ?? watch.read());
        if (stat === null) continue;
        return { nodePath: watch.path, czxid: czxidOf(stat), watch };
      }
      if (!contended) {
        contended = true;
        this.#request.contended();
      }
      if (monotonicNow() >= this.#request.deadline) return undefined;
      await this.#waitForDeletion(this.#node.path(blocker.name));
    }
    return undefined;
  }

  /** The lock's children, listed without a watch. */
  #listContenders(signal?: AbortLike): Promise<string[]> {
    return this.#session.request<string[]>('listing lock contenders', (done) =>
      this.#session.listChildren(this.#settings.lockPath, undefined, (error, list) => done(error, list ?? [])),
      { signal },
    );
  }

  /** The watch on our node `name` (the first listing's, once that one is placed), made on first use. */
  #ownWatch(name: string): OwnNodeWatch {
    const path = this.#node.path(name);
    const existing = this.#watches.find((watch) => watch.isOn(path));
    if (existing !== undefined) return existing;
    const watch = new OwnNodeWatch(this.#session, path);
    this.#watches.push(watch);
    return watch;
  }

  /**
   * Creates our contender node, finding it again if the reply was lost. Resolves what came with the
   * create that succeeded (nothing when the node was found again after a lost reply).
   */
  async #create(): Promise<FirstReads | undefined> {
    const { metadata } = this.#request;
    // '' is zero bytes, which ZooKeeper keeps apart from no data at all (what `undefined` writes).
    const data = metadata === undefined ? undefined : Buffer.from(metadata, 'utf8');
    const { knownZnodes, lockPath } = this.#settings;
    for (let attempt = 0; attempt < MAX_CREATE_ATTEMPTS; attempt += 1) {
      // No abort listened to for the first create (see #acquire).
      const signal = attempt === 0 ? undefined : this.#request.waitSignal;
      if (signal?.aborted) throw signal.reason;
      // The listing goes right behind the create, in the same write (the session coalesces one turn's
      // requests): answered after it, it sees our node and costs no round trip of its own.
      // A lock this provider has not used may have no znode yet: its create goes first, in the same write.
      if (attempt === 0 && !knownZnodes.knows(lockPath)) createLockParentAhead(this.#session, lockPath);
      const creating = this.#session.request<Created>(
        'creating the contender node',
        (done) => {
          const path = this.#node.path(this.#prefix);
          const { acl, wire } = this.#session;
          const mode = CreateMode.EPHEMERAL_SEQUENTIAL;
          if (wire !== undefined) wire.create2(path, data, acl, mode, (error, created, stat) => done(error, { path: created, stat }));
          else if (data === undefined) this.#session.client.create(path, acl, mode, (error, created) => done(error, { path: created, stat: undefined }));
          else this.#session.client.create(path, data, acl, mode, (error, created) => done(error, { path: created, stat: undefined }));
        },
        { late: (created) => this.#node.adoptLate(created.path), signal },
      );
      // A lock this session holds already (another acquisition of this process, in core's line of
      // waiters or shared): this attempt will wait, and a watch on the lock znode would only fire at
      // the next change, for nothing. Otherwise the listing's watch is placed on our node once the
      // create answers.
      const watch = this.#session.holdsUnder(lockPath) ? undefined : new OwnNodeWatch(this.#session);
      if (watch !== undefined) this.#watches.push(watch);
      const children = (watch === undefined ? this.#listContenders() : watch.listChildren(lockPath)).catch(() => undefined);
      try {
        const created = await creating;
        const name = this.#node.created(created.path);
        watch?.placed(this.#node.path(name));
        knownZnodes.record(lockPath);
        return { children, watch, stat: created.stat };
      } catch (error) {
        // This create's listing is moot: the next one lists again.
        if (watch !== undefined) {
          watch.stop();
          this.#watches.splice(this.#watches.indexOf(watch), 1);
        }
        const { waitSignal } = this.#request;
        if (waitSignal.aborted) {
          // The create may still be applied: cleanup looks for it, and a late answer deletes it.
          this.#node.createMayHaveApplied();
          throw waitSignal.reason;
        }
        const code = zooKeeperCode(error);
        if (code === Exception.NO_NODE) {
          await ensureLockParent(this.#session, this.#settings.root, lockPath);
          continue;
        }
        if (code !== Exception.CONNECTION_LOSS && !(error instanceof RequestTimeoutError)) throw error;
        // The create may have been applied: look for our node by its unique prefix once connected.
        if (await this.#node.findAfterLostReply(waitSignal)) return undefined;
      }
    }
    throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `could not create a contender node for lock "${this.#request.key}"`, {
      key: this.#request.key,
    });
  }

  /** Waits until `path` is deleted (one watch), the deadline passes, the session changes, or abort. */
  async #waitForDeletion(path: string): Promise<void> {
    const { waitSignal: signal, deadline } = this.#request;
    // Through the session's shared watcher, not a function of our own: the client keeps what it is
    // handed until the node changes, and this wait may give up long before that.
    const latch = new WatchLatch(this.#session, path);
    try {
      // getData (not exists) so that no watch is left behind when the node is already gone.
      try {
        await this.#session.request<null>(
          'watching the predecessor',
          (done) => this.#session.client.getData(path, this.#session.watches.watcher, (error) => done(error, null)),
          { signal },
        );
      } catch (error) {
        if (zooKeeperCode(error) === Exception.NO_NODE) return;
        throw error;
      }
      await latch.wait(deadline, signal);
    } finally {
      latch.stop();
    }
  }
}
