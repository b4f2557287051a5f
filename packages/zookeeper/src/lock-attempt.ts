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
 * - The read that gives our node's czxid also leaves a watch on it (see `OwnNodeWatch`), handed to
 *   the grant; every other watch of ours the attempt made is stopped when it ends.
 * - Whatever the attempt created is deleted before it resolves `undefined` or rejects, including a
 *   create answered after we stopped waiting for it. What cannot be deleted now (the client is
 *   disconnected, the delete got no answer, a create's outcome is unknown) is handed to core
 *   (`request.releaseLater`), which retries it until it is answered or the session is gone.
 */
import { type BackendAcquireRequest, LockError, LockErrorCode, RequestTimeoutError, monotonicNow } from '@fencelock/core/adapter';
import { CreateMode, Exception, type Stat } from 'node-zookeeper-client';
import { type QueueNaming, blockerOf, ownNodePrefix, parseContender, sortedContenders } from './contender-names.js';
import { createLockParentAhead, ensureLockParent } from './lock-parent.js';
import { OwnNodeWatch, czxidOf } from './own-node-watch.js';
import { OwnSequentialNode } from './own-sequential-node.js';
import type { SequenceHints } from './sequence-hints.js';
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
  /** Guesses of our next sequence number per lock, shared by the provider's attempts. */
  readonly hints: SequenceHints;
}

/**
 * The reads sent right behind the create, before its reply: ZooKeeper answers one session's requests
 * in the order they were sent, so both see our new node. Each settles to `undefined` on failure (the
 * first round then asks again).
 */
interface FirstReads {
  /** The lock's children, listed after our create. */
  readonly children: Promise<string[] | undefined>;
  /** The stat of the node we guessed we would create (read with a watch), and that guessed name. */
  readonly guessedName: string | undefined;
  readonly guessedStat: Promise<Stat | null | undefined> | undefined;
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
// The sequence ZooKeeper gives the first child of a new znode (its cversion is 0), as its 10 digits.
const FIRST_SEQUENCE = '0000000000';

/** One run of the lock recipe for one acquire request (internal; see the module comment). */
export class LockAttempt {
  readonly #settings: AttemptSettings;
  readonly #request: BackendAcquireRequest;
  readonly #prefix: string;
  readonly #node: OwnSequentialNode;
  // Every watch this attempt set on a node of its own (a guessed name, our node): all but the one
  // handed to the grant are stopped when the attempt ends.
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
      // Round 0 needs the node's stat (for the czxid) at once on a free lock: from the guess sent
      // with the create when it was right, else asked for now, pipelined with the listing.
      let statRequest: Promise<Stat | null> | undefined;
      if (round === 0) {
        // When the guess was right, its watch is the one on our node.
        const watch = this.#ownWatch(ours);
        statRequest = first?.guessedName === ours ? this.#guessedStat(first, watch) : watch.read();
        statRequest.catch(() => undefined);
      }
      const listed = round === 0 ? await first?.children : undefined;
      const children =
        listed?.includes(ours) === true
          ? listed
          : await this.#session.request<string[]>(
              'listing lock contenders',
              (done) => this.#session.client.getChildren(this.#settings.lockPath, (error, list) => done(error, list)),
              { signal },
            );
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

  // The guessed stat when it arrived; if that read failed, ask again (the name is right).
  async #guessedStat(first: FirstReads, watch: OwnNodeWatch): Promise<Stat | null> {
    const stat = await first.guessedStat;
    return stat === undefined ? watch.read() : stat;
  }

  /** The watch on our node `name` (the guessed name's when the guess was right), made on first use. */
  #ownWatch(name: string): OwnNodeWatch {
    const path = this.#node.path(name);
    const existing = this.#watches.find((watch) => watch.path === path);
    if (existing !== undefined) return existing;
    const watch = new OwnNodeWatch(this.#session, path);
    this.#watches.push(watch);
    return watch;
  }

  /**
   * Creates our contender node, finding it again if the reply was lost. Resolves the reads sent with
   * the create that succeeded (none when the node was found again after a lost reply).
   */
  async #create(): Promise<FirstReads | undefined> {
    const { metadata } = this.#request;
    // '' is zero bytes, which ZooKeeper keeps apart from no data at all (what `undefined` writes).
    const data = metadata === undefined ? undefined : Buffer.from(metadata, 'utf8');
    const { hints, lockPath } = this.#settings;
    for (let attempt = 0; attempt < MAX_CREATE_ATTEMPTS; attempt += 1) {
      // No abort listened to for the first create (see #acquire).
      const signal = attempt === 0 ? undefined : this.#request.waitSignal;
      if (signal?.aborted) throw signal.reason;
      // The listing and (when the sequence can be guessed) our node's stat go right behind the create,
      // in the same write (the session coalesces one turn's requests): answered after it, in order,
      // they see our node and cost no round trip of their own.
      // A lock we hold no hint for may have no znode yet: its create goes first, in the same write,
      // and the first child of a new znode gets sequence 0.
      const fresh = attempt === 0 && !hints.knows(lockPath);
      if (fresh) createLockParentAhead(this.#session, lockPath);
      const guess = fresh ? FIRST_SEQUENCE : hints.guess(lockPath);
      const guessedName = guess === undefined ? undefined : `${this.#prefix}${guess}`;
      // A wrong guess names a node that never exists: the read sets no watch at the server.
      const guessedWatch = guessedName === undefined ? undefined : new OwnNodeWatch(this.#session, this.#node.path(guessedName));
      if (guessedWatch !== undefined) this.#watches.push(guessedWatch);
      const creating = this.#session.request<string>(
        'creating the contender node',
        (done) => {
          const path = this.#node.path(this.#prefix);
          const { acl } = this.#session;
          if (data === undefined) this.#session.client.create(path, acl, CreateMode.EPHEMERAL_SEQUENTIAL, done);
          else this.#session.client.create(path, data, acl, CreateMode.EPHEMERAL_SEQUENTIAL, done);
        },
        { late: (path) => this.#node.adoptLate(path), signal },
      );
      const first: FirstReads = {
        children: this.#session
          .request<string[]>('listing lock contenders', (done) =>
            this.#session.client.getChildren(lockPath, (error, list) => done(error, list)),
          )
          .catch(() => undefined),
        guessedName,
        guessedStat: guessedWatch?.read().catch(() => undefined),
      };
      try {
        const name = this.#node.created(await creating);
        const sequence = parseContender(name, this.#settings.naming)?.sequence;
        if (sequence !== undefined) hints.record(lockPath, sequence, guess);
        return first;
      } catch (error) {
        // This create's guess is moot: the next one guesses again, maybe the same name.
        if (guessedWatch !== undefined) {
          guessedWatch.stop();
          this.#watches.splice(this.#watches.indexOf(guessedWatch), 1);
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
