/**
 * The fencelock backend for ZooKeeper: sessions, the lock recipe, the semaphore recipe (Curator's
 * `InterProcessSemaphoreV2`, see `SemaphoreAttempt`), leader election (Curator's `LeaderLatch`: the
 * lock recipe with `latch-` candidates, see `election-paths.ts`), grants and inspection. A
 * semaphore's grant is its lease node's, and a leadership its candidate node's, with the same
 * guarantees as a lock's contender node below.
 *
 * Guarantees: a grant's `validUntil` is its session's deadline (last answered request's send time
 * + granted session timeout − core's drift margin) and is renewed by the session's keepalives and
 * answers (core's SessionKeeper); the grant is reported
 * uncertain on disconnection, recovered on reconnection within the session, and lost on session
 * expiry or when the deadline passes without an answer. Its fencing token is the czxid of its own
 * node, and that node is watched while held: its deletion by anyone but our release is reported lost
 * (`taken-over`) within one notification (see `OwnNodeWatch`). Release deletes only our own node (its
 * path carries our sequence number and unique prefix).
 */
import {
  type AbortLike,
  type BackendAcquireRequest,
  type BackendCampaignRequest,
  type BackendGrant,
  type BackendSemaphoreRequest,
  type LockBackend,
  type LockCapabilities,
  type LockHolder,
  type LockInfo,
  type LeaderInfo,
  type SemaphoreHolder,
  type SemaphoreInfo,
  LockError,
  LockErrorCode,
  InFlight,
  RequestDeadlines,
  backendUnavailableError,
  isLockError,
  lockLostError,
  NEVER_ABORTED,
  monotonicNow,
  normalizeCapabilities,
  waitFor,
} from '@fencelock/core/adapter';
import { Exception, type Stat } from 'node-zookeeper-client';
import { holdersOf, sortedContenders } from './contender-names.js';
import { electionPaths } from './election-paths.js';
import { encodeKeySegment } from './key-encoding.js';
import { KnownLockZnodes } from './known-lock-znodes.js';
import { LeaderWatch } from './leader-watch.js';
import { type HeldNode, LockAttempt, lockRequestFor } from './lock-attempt.js';
import { removeEmptyChain } from './lock-parent.js';
import { czxidOf } from './own-node-watch.js';
import {
  DEFAULT_SESSION_TIMEOUT_MS,
  MIN_SESSION_TIMEOUT_MS,
  type ResolvedOptions,
  type SessionTiming,
  resolveOptions,
  sessionTiming,
} from './options.js';
import { SemaphoreAttempt } from './semaphore-attempt.js';
import { decodeLeaseData, semaphorePaths, sortedLeases } from './semaphore-paths.js';
import { type SessionGrant, type SessionSettings, ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

// A queued attempt whose session died (expiry, deadline) re-queues in a new session this many times.
const MAX_SESSION_RESTARTS = 3;
// An emptied lock znode is removed this long after its last contender left, unless this provider
// uses the key again first: a hot key does not pay two extra writes per acquisition (Curator's
// container nodes get the same effect from the server's periodic sweep).
const PARENT_REMOVAL_DELAY_MS = 1_000;

/** A lock's empty parent znodes, removed a moment after the lock was last used here unless used again. */
interface ParentRemoval {
  readonly lockPath: string;
  readonly session: ZooKeeperSession;
  readonly paths: readonly string[];
  cancelled: boolean;
}

// Everything but the step of validity, which follows the session timeout the server granted.
function capabilitiesWith(ttlResolutionMs: number): LockCapabilities {
  return normalizeCapabilities({
    // czxid: the zxid of the creating transaction, from the ensemble's one linearizable log.
    fencing: 'global',
    lossDetection: true,
    // extend() verifies the node is still ours and refreshes validity by one session timeout.
    extend: true,
    notify: true,
    fifo: true,
    readWrite: true,
    expiry: 'session',
    // Validity advances in keepalive steps.
    ttlResolutionMs,
    minTtlMs: MIN_SESSION_TIMEOUT_MS,
    // A watch on the holder's own node (set by the read of its czxid): a delete is heard within a
    // notification, not at the end of the session.
    deletionNotice: 'watch',
    // Curator's InterProcessSemaphoreV2 takes several leases one by one, not atomically: one permit per acquisition.
    semaphore: 'single-permit',
    // A children watch on the election's latch znode tells observers of every candidate that comes or goes.
    election: 'notified',
  });
}

/**
 * The capabilities of a provider with the default options, before its first connection (only
 * `ttlResolutionMs`, the keepalive step, depends on the session timeout the server grants: a third
 * of it).
 */
export const ZOOKEEPER_CAPABILITIES: LockCapabilities = capabilitiesWith(
  sessionTiming(resolveOptions({ connectionString: '127.0.0.1:2181' }), DEFAULT_SESSION_TIMEOUT_MS).keepaliveIntervalMs,
);

/** The {@link LockBackend} behind `ZooKeeperLockProvider` (internal). */
export class ZooKeeperBackend implements LockBackend {
  readonly name = 'zookeeper';
  readonly #options: ResolvedOptions;
  #capabilities: LockCapabilities;
  // From the requested session timeout until a server answered, then from the last one granted.
  #timing: SessionTiming;
  #session: ZooKeeperSession | undefined;
  #closed = false;
  readonly #background = new Set<Promise<void>>();
  readonly #attempts = new InFlight();
  // Keyed by the lock's (or semaphore's) znode; `paths` are the empty znodes to remove, children first.
  readonly #parentRemovals = new Map<string, ParentRemoval>();
  // The removals' delays, behind one timer: every release schedules one and the next acquire of the
  // key cancels it, so a timer armed and cleared per cycle would cost more than the bookkeeping.
  readonly #parentRemovalDelays = new RequestDeadlines<ParentRemoval>(PARENT_REMOVAL_DELAY_MS, {
    settled: (removal) => removal.cancelled,
    expire: (removal) => this.#removeParentNow(removal),
  });
  readonly #knownZnodes = new KnownLockZnodes();
  // The watches of `watchLeader`: each follows the current session (handed every new one).
  readonly #leaderWatches = new Set<LeaderWatch>();

  constructor(options: ResolvedOptions) {
    this.#options = options;
    this.#timing = sessionTiming(options, options.sessionTimeoutMs);
    this.#capabilities = capabilitiesWith(this.#timing.keepaliveIntervalMs);
  }

  /** What the provider guarantees; `ttlResolutionMs` follows the granted session timeout (core reads this on every use). */
  get capabilities(): LockCapabilities {
    return this.#capabilities;
  }

  /** The session timeout the server granted at the last connection (until one did: the requested one), in ms. */
  get sessionTimeoutMs(): number {
    return this.#timing.timeoutMs;
  }

  /** The session in use (opened on first use), for tests and diagnostics. */
  get currentSession(): ZooKeeperSession | undefined {
    return this.#session;
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    const lockPath = this.#lockPath(request.key);
    const emptied = [lockPath];
    return this.#acquireHeld(request, lockPath, emptied, (session) =>
      new LockAttempt({ session, root: this.#options.root, lockPath, naming: this.#options.naming, knownZnodes: this.#knownZnodes }, request).run(),
    );
  }

  /**
   * `LockBackend.acquireSemaphore`: one permit (`capabilities.semaphore` is `single-permit`) of the
   * semaphore at `<root>/#semaphores/<encoded key>`, by Curator's `InterProcessSemaphoreV2` recipe
   * (see `SemaphoreAttempt`).
   */
  async acquireSemaphore(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    if (request.permits !== 1) {
      // Core refuses more than one permit for a single-permit backend before calling us.
      throw new LockError(LockErrorCode.UNSUPPORTED, 'ZooKeeper semaphores take one permit at a time', { key: request.key });
    }
    const paths = semaphorePaths(this.#options.root, request.key);
    // Children before parents; the `#semaphores` znode itself stays, as the root does.
    const emptied = [paths.leases, paths.locks, paths.semaphore];
    return this.#acquireHeld(request, paths.semaphore, emptied, (session) =>
      new SemaphoreAttempt({ session, paths, knownZnodes: this.#knownZnodes }, request).run(),
    );
  }

  /**
   * `LockBackend.campaign`: a candidacy in the election at `<root>/#elections/<encoded name>`, by
   * Curator's `LeaderLatch` recipe: an EPHEMERAL_SEQUENTIAL node `_c_<uuid>-latch-<seq>` holding the
   * value, led by the first candidate in sequence order, each other watching its predecessor. It is
   * the lock recipe with other names (`LockAttempt`, `latch` naming), and leadership is granted,
   * watched, renewed, lost and resigned as a held lock is.
   *
   * The term is the candidate node's czxid, strictly increasing in leadership order for one name:
   * sequence numbers of one latch znode follow creation order, which is czxid order (both come from
   * the one transaction that creates the node). A node that leads is the first of the candidates
   * present; every node created before it was gone by then and never comes back (a node is never
   * re-created under the same name), and a node created after it cannot lead while it is there. So
   * every later leader's node was created after this one's: a greater czxid. (A latch znode removed
   * when empty restarts its sequence at 0, but it was empty: every node after that is newer still.)
   */
  async campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    const { elections, election } = electionPaths(this.#options.root, request.key);
    // The node's data is the value as UTF-8 bytes, as Curator stores a participant id.
    const candidacy = lockRequestFor(request, request.value);
    return this.#acquireHeld(request, election, [election], (session) =>
      new LockAttempt({ session, root: elections, lockPath: election, naming: 'latch', knownZnodes: this.#knownZnodes }, candidacy).run(),
    );
  }

  /**
   * `LockBackend.leader`: the first candidate (in sequence order) of election `name` that can still be
   * read, as Curator's `LeaderLatch.getLeader()` finds it: its data as the value, its czxid as the term.
   */
  async leader(name: string): Promise<LeaderInfo | undefined> {
    const session = await this.#ready(NEVER_ABORTED, name);
    const { election } = electionPaths(this.#options.root, name);
    const children = await this.#listSynced(session, election, 'listing election candidates', name);
    // Read one at a time: the first is the leader unless it left since the listing, then the next.
    for (const candidate of sortedContenders(children ?? [], 'latch')) {
      const node = await this.#readNode(session, `${election}/${candidate.name}`, 'reading the election leader', name);
      if (node === undefined) continue;
      return { name, value: node.data === undefined || node.data === null ? '' : node.data.toString('utf8'), term: czxidOf(node.stat) };
    }
    return undefined;
  }

  /** `LockBackend.watchLeader`: a children watch on the election's latch znode (see `LeaderWatch`). */
  async watchLeader(name: string, onChange: () => void, signal: AbortSignal): Promise<void> {
    const session = await this.#ready(signal, name);
    if (signal.aborted) return;
    const watch = new LeaderWatch(electionPaths(this.#options.root, name).election, onChange);
    const stop = (): void => {
      watch.stop();
      this.#leaderWatches.delete(watch);
    };
    this.#leaderWatches.add(watch);
    signal.addEventListener('abort', stop, { once: true });
    try {
      await watch.start(session);
    } catch (error) {
      stop();
      signal.removeEventListener('abort', stop);
      throw this.#wrap(error, name);
    }
  }

  /**
   * Runs attempts (`attempt` in the current session) until one holds a node, the deadline passes, or
   * it fails; an attempt whose session died under it queues again in a new session, a bounded number
   * of times. `emptied` are the znodes removed (if empty) a moment after `parent` was last used here.
   */
  async #acquireHeld(
    request: Omit<BackendAcquireRequest, 'mode' | 'metadata'>,
    parent: string,
    emptied: readonly string[],
    attempt: (session: ZooKeeperSession) => Promise<HeldNode | undefined>,
  ): Promise<BackendGrant | undefined> {
    this.#cancelParentRemoval(parent);
    const released = (session: ZooKeeperSession) => () => this.#removeParentLater(session, parent, emptied);
    for (let restart = 0; ; restart += 1) {
      // Connected (the common case): no wait, and no listener on the request's abort (see LockAttempt).
      const current = this.#session;
      const session =
        current?.isReady === true && !this.#closed ? current : await this.#ready(request.waitSignal, request.key, request.deadline);
      try {
        let held: HeldNode | undefined;
        this.#attempts.begin();
        try {
          held = await attempt(session);
        } finally {
          this.#attempts.end();
        }
        if (held === undefined) {
          released(session)();
          return undefined;
        }
        if (session.alive) return this.#grant(session, request, held, released(session));
        held.watch.stop();
      } catch (error) {
        if (request.waitSignal.aborted) throw request.waitSignal.reason;
        if (session.alive || !session.owned || restart >= MAX_SESSION_RESTARTS) throw this.#wrap(error, request.key);
      }
      // The session died under the attempt (its node with it): queue again in a new session.
      if (monotonicNow() >= request.deadline && restart > 0) return undefined;
      if (restart >= MAX_SESSION_RESTARTS) {
        throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `ZooKeeper sessions kept ending while acquiring "${request.key}"`, {
          key: request.key,
        });
      }
    }
  }

  async inspect(key: string): Promise<LockInfo | undefined> {
    const session = await this.#ready(NEVER_ABORTED, key);
    const lockPath = this.#lockPath(key);
    const children = await this.#listSynced(session, lockPath, 'listing lock contenders', key);
    if (children === undefined) return undefined;
    const holders = await Promise.all(
      holdersOf(sortedContenders(children)).map(async (contender): Promise<LockHolder | undefined> => {
        const node = await this.#readNode(session, `${lockPath}/${contender.name}`, 'reading a lock holder', key);
        if (node === undefined) return undefined;
        const { data, stat } = node;
        return {
          ownerId: contender.ownerId ?? contender.name,
          mode: contender.mode,
          fencingToken: czxidOf(stat),
          remainingMs: undefined,
          // ZooKeeper keeps a create without data (null) apart from zero bytes: `metadata: ''` is
          // written as zero bytes and reads back as ''; no metadata is written as no data. A kazoo
          // Lock without identifier writes zero bytes too, and kazoo's contenders() shows it as ''.
          metadata: data === undefined || data === null ? undefined : data.toString('utf8'),
        };
      }),
    );
    const present = holders.filter((holder): holder is LockHolder => holder !== undefined);
    return present.length === 0 ? undefined : { key, holders: present };
  }

  /**
   * `LockBackend.inspectSemaphore`: the lease nodes, oldest first. The limit is the one our holders
   * wrote in their nodes; the first `limit` nodes are holders and a node beyond them is the mutex
   * holder waiting for a lease. When no node carries a limit (Curator holders only: Curator keeps
   * its `maxLeases` in memory), every node is reported as a holder and `limit` is their number.
   */
  async inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    const session = await this.#ready(NEVER_ABORTED, key);
    const { leases } = semaphorePaths(this.#options.root, key);
    const children = await this.#listSynced(session, leases, 'listing semaphore leases', key);
    if (children === undefined) return undefined;
    const nodes = await Promise.all(
      sortedLeases(children).map(async (lease) => {
        const node = await this.#readNode(session, `${leases}/${lease.name}`, 'reading a semaphore lease', key);
        return node === undefined ? undefined : { lease, ...node };
      }),
    );
    const present = nodes.filter((node) => node !== undefined);
    if (present.length === 0) return undefined;
    const limit = present.map(({ data }) => decodeLeaseData(data)?.limit).find((stored) => stored !== undefined) ?? present.length;
    const holders = present.slice(0, limit).map(({ lease, data, stat }): SemaphoreHolder => {
      const ours = decodeLeaseData(data);
      return {
        ownerId: lease.ownerId ?? lease.name,
        mode: 'semaphore',
        permits: 1,
        fencingToken: czxidOf(stat),
        remainingMs: undefined,
        // Another client's node: its data as text, as a lock's inspect shows it.
        metadata: ours !== undefined ? ours.metadata : data === undefined || data === null ? undefined : data.toString('utf8'),
      };
    });
    return { key, limit, holders };
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Core has aborted every attempt in progress: let them delete their nodes while the session is
    // open (a given client's session outlives the provider), within one request timeout.
    const attempts = this.#attempts.settled();
    await waitFor({
      deadline: monotonicNow() + this.#timing.requestTimeoutMs,
      until: (wake) => {
        void attempts.then(() => wake());
        return () => undefined;
      },
    });
    this.#parentRemovalDelays.clear();
    for (const { session, paths } of this.#parentRemovals.values()) this.#track(removeEmptyChain(session, paths));
    this.#parentRemovals.clear();
    await Promise.allSettled([...this.#background]);
    await this.#session?.close();
  }

  /** @internal For tests: the current session drops its connection as a crashed process would. */
  dropConnectionForTesting(): void {
    const session = this.#session;
    if (session === undefined) throw new Error('no ZooKeeper session was opened yet');
    session.dropConnectionForTesting();
  }

  // Reads are served by whichever server we are connected to, which may not have applied a write
  // another client already saw acknowledged. node-zookeeper-client has no sync(); a multi with one
  // check op goes through the leader's pipeline like a write, and its answer comes only after our
  // server applied everything before it — the same effect.
  #syncWithLeader(session: ZooKeeperSession): Promise<null> {
    return session.request<null>('syncing with the leader', (done) => session.client.transaction().check('/', -1).commit((error) => done(error, null)));
  }

  /** The children of `path` as the leader sees them now (after a sync); `undefined` when it does not exist. */
  async #listSynced(session: ZooKeeperSession, path: string, what: string, key: string): Promise<string[] | undefined> {
    try {
      await this.#syncWithLeader(session);
      return await session.request<string[]>(what, (done) => session.listChildren(path, undefined, (error, list) => done(error, list ?? [])));
    } catch (error) {
      if (zooKeeperCode(error) === Exception.NO_NODE) return undefined;
      throw this.#wrap(error, key);
    }
  }

  /** The data and stat of node `path`; `undefined` when it is gone (released between a listing and this read). */
  async #readNode(session: ZooKeeperSession, path: string, what: string, key: string): Promise<{ data: Buffer | undefined; stat: Stat } | undefined> {
    try {
      return await session.request<{ data: Buffer | undefined; stat: Stat }>(what, (done) =>
        session.client.getData(path, (error, value, stat) => done(error, { data: value, stat })),
      );
    } catch (error) {
      if (zooKeeperCode(error) === Exception.NO_NODE) return undefined;
      throw this.#wrap(error, key);
    }
  }

  #lockPath(key: string): string {
    return `${this.#options.root}/${encodeKeySegment(key)}`;
  }

  async #ready(signal: AbortLike, key: string, waitUntil?: number): Promise<ZooKeeperSession> {
    // A session of our own that ends while we wait for it (expired on reconnection, past its deadline)
    // is replaced by a new one, a bounded number of times.
    for (let restart = 0; ; restart += 1) {
      const session = this.#currentSession(key);
      try {
        await session.ready(signal, waitUntil);
        return session;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (session.alive || !session.owned || restart >= MAX_SESSION_RESTARTS) throw this.#wrap(error, key);
      }
    }
  }

  #currentSession(key: string): ZooKeeperSession {
    if (this.#closed) throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the ZooKeeper provider is closed', { key });
    const current = this.#session;
    if (current?.alive === true) return current;
    const settings: SessionSettings = {
      timingFor: (timeoutMs) => sessionTiming(this.#options, timeoutMs),
      access: this.#options.access,
      // Only the current session connects: a replaced one is dead and hears no more state changes.
      granted: (timing) => {
        if (timing.keepaliveIntervalMs !== this.#timing.keepaliveIntervalMs) this.#capabilities = capabilitiesWith(timing.keepaliveIntervalMs);
        this.#timing = timing;
      },
    };
    let session: ZooKeeperSession;
    if (this.#options.client !== undefined) {
      // A given client's session cannot be renewed: once it ended, so has this provider.
      if (current !== undefined) {
        throw new LockError(
          LockErrorCode.BACKEND_UNAVAILABLE,
          `the ZooKeeper session of the client given to this provider ended (${current.end ?? 'closed'}); pass a new client`,
          { key },
        );
      }
      session = new ZooKeeperSession(this.#options.client, false, settings);
    } else {
      session = ZooKeeperSession.open(this.#options.connectionString ?? '', this.#options.sessionTimeoutMs, this.#options.spinDelayMs, settings);
    }
    this.#session = session;
    // Before it connects: every leader watch sets its watch there at the first connection.
    for (const watch of this.#leaderWatches) watch.attach(session);
    return session;
  }

  /** The grant of a held node (a lock's contender node, a semaphore's lease node); `released` runs after its delete. */
  #grant(session: ZooKeeperSession, request: Pick<BackendAcquireRequest, 'key' | 'observer'>, held: HeldNode, released: () => void): BackendGrant {
    // Only what the grant needs: its closures share one scope, and the request holds far more.
    const { key, observer } = request;
    const { nodePath, czxid, watch } = held;
    // Set once release() is called: our own delete (or anyone's, from then on) is not a loss.
    let releasing = false;
    let deleted = false;
    // Lost with the session, the watch stays subscribed in a session that is gone or (a client we
    // were given) until our node goes: its notification then finds the grant gone and stops it.
    const entry: SessionGrant = { key, nodePath, observer };
    session.addGrant(entry);
    if (!session.hasGrant(entry)) watch.stop();
    else {
      watch.hold(czxid, () => {
        if (releasing || !session.hasGrant(entry)) return;
        deleted = true;
        session.removeGrant(entry);
        observer.lost(lockLostError(key, 'taken-over'));
        // Our node is gone and core sends no delete for a lost grant: its emptied parents go as after a release.
        released();
      });
    }
    const wrap = (error: unknown): LockError => this.#wrap(error, key);
    return {
      fencingToken: czxid,
      validUntil: session.validUntil(),
      async extend(): Promise<number> {
        if (!session.hasGrant(entry)) throw lockLostError(key, deleted ? 'taken-over' : 'session-lost');
        // A keepalive through core's keeper (LOCK_LOST when the session is gone) and the check that
        // our node is still there and ours, sent in the same write.
        const [renewal, check] = await Promise.allSettled([
          session.keepAliveNow(),
          session.request<Stat | null>('checking the lock node', (done) =>
            session.client.exists(nodePath, (error, value) => done(error, value ?? null)),
          ),
        ]);
        if (renewal.status === 'rejected') {
          if (isLockError(renewal.reason, LockErrorCode.LOST)) throw lockLostError(key, 'session-lost', renewal.reason);
          throw wrap(renewal.reason);
        }
        if (check.status === 'rejected') throw wrap(check.reason);
        const stat = check.value;
        if (stat === null || !stat.ephemeralOwner.equals(session.sessionId)) {
          deleted = true;
          watch.stop();
          session.removeGrant(entry);
          throw lockLostError(key, 'taken-over');
        }
        return renewal.value;
      },
      // One bounded attempt (the request timeout); a failure rejects and core retries. The grant
      // stays with the session until the delete is answered: the node lives as long as the session,
      // so the session's renewals keep the retries going, and its end (the node gone) stops them.
      release: async (): Promise<boolean> => {
        releasing = true;
        watch.stop();
        if (!session.alive) {
          session.removeGrant(entry);
          return false;
        }
        if (!session.connected) {
          // Nothing to send it on. While the session keeps the lock, fail now: core retries with
          // backoff and the session's renewals keep the retries going. A lock the session already
          // lost (a given client's keeper ran out; its session may yet come back) gets no retries:
          // its delete waits in the client and goes out if it reconnects.
          if (session.hasGrant(entry)) throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `releasing lock "${key}": the ZooKeeper client is not connected`, { key });
          session.removeNode(nodePath, -1, () => undefined);
          return false;
        }
        try {
          await session.request<null>('deleting the lock node', (done) => session.removeNode(nodePath, -1, (error) => done(error, null)));
          session.removeGrant(entry);
          return true;
        } catch (error) {
          if (zooKeeperCode(error) !== Exception.NO_NODE) throw wrap(error);
          session.removeGrant(entry);
          return false;
        } finally {
          released();
        }
      },
    };
  }

  /** Removes `paths` (children first), each if empty, a moment after `lockPath` was last used here. */
  #removeParentLater(session: ZooKeeperSession, lockPath: string, paths: readonly string[]): void {
    if (!this.#options.removeEmptyParents) return;
    this.#cancelParentRemoval(lockPath);
    if (this.#closed) {
      this.#track(removeEmptyChain(session, paths));
      return;
    }
    const removal: ParentRemoval = { lockPath, session, paths, cancelled: false };
    this.#parentRemovals.set(lockPath, removal);
    this.#parentRemovalDelays.add(removal);
  }

  #removeParentNow(removal: ParentRemoval): void {
    if (this.#parentRemovals.get(removal.lockPath) !== removal) return;
    this.#parentRemovals.delete(removal.lockPath);
    // Gone: the next acquire of the key sends the znode's create ahead of its own.
    for (const path of removal.paths) this.#knownZnodes.forget(path);
    this.#track(removeEmptyChain(removal.session, removal.paths));
  }

  #cancelParentRemoval(lockPath: string): void {
    const pending = this.#parentRemovals.get(lockPath);
    if (pending === undefined) return;
    pending.cancelled = true;
    this.#parentRemovals.delete(lockPath);
  }

  #track(work: Promise<void>): void {
    this.#background.add(work);
    void work.finally(() => this.#background.delete(work));
  }

  #wrap(error: unknown, key: string): LockError {
    if (isLockError(error)) return error;
    return backendUnavailableError(`ZooKeeper request for lock "${key}" failed`, error, key);
  }
}
