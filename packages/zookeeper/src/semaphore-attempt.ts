/**
 * One acquisition of a semaphore permit: Apache Curator's `InterProcessSemaphoreV2` recipe, on the
 * layout of `semaphore-paths.ts`.
 *
 * 1. Take the semaphore's `locks` mutex (the lock recipe of `LockAttempt`, Curator-named, so that a
 *    Curator semaphore queues in the same line): waiting acquirers are served in mutex order (FIFO),
 *    each woken by the deletion of its predecessor.
 * 2. Holding it, read the data of the lease nodes and refuse (`limitMismatchError`, nothing taken)
 *    when one of ours was written with another limit.
 * 3. Create our EPHEMERAL_SEQUENTIAL lease node (`_c_<owner id>-lease-`), then list `leases` with a
 *    children watch: at most `limit` children (ours included) means we hold a lease; otherwise wait
 *    for the watch (a lease released or gone with its session), the deadline, or an abort, and count
 *    again.
 * 4. Release the mutex, whatever happened; on every outcome but a grant, delete our lease node first.
 *
 * Guarantees:
 * - At most `limit` leases are held, provided every acquirer follows the recipe with the same limit:
 *   lease nodes are created only under the mutex, and only its holder counts them.
 * - The fencing token is the lease node's czxid. Lease nodes are created one at a time under the
 *   mutex, and the mutex holder is granted (or gives up and deletes its node) before the next holder
 *   of the mutex creates one: grant order is creation order, so tokens of one semaphore increase
 *   strictly in grant order.
 * - The read that gives the czxid leaves a watch on the lease node (see `OwnNodeWatch`), handed to the
 *   grant: its deletion by anyone but our release is a loss.
 * - A create whose reply was lost is found again by its unique prefix; what cannot be deleted now is
 *   handed to core (`request.releaseLater`), as `LockAttempt` does.
 */
import {
  type BackendSemaphoreRequest,
  LockError,
  LockErrorCode,
  RequestTimeoutError,
  limitMismatchError,
  monotonicNow,
} from '@fencelock/core/adapter';
import { CreateMode, Exception, type Stat } from 'node-zookeeper-client';
import type { KnownLockZnodes } from './known-lock-znodes.js';
import { type HeldNode, LockAttempt, lockRequestFor } from './lock-attempt.js';
import { ensureLockParent } from './lock-parent.js';
import { OwnNodeWatch, czxidOf } from './own-node-watch.js';
import { OwnSequentialNode } from './own-sequential-node.js';
import { type SemaphorePaths, decodeLeaseData, encodeLeaseData, leasePrefix } from './semaphore-paths.js';
import { WatchLatch } from './watch-latch.js';
import { type ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

/** Where the attempt runs. */
export interface SemaphoreAttemptSettings {
  readonly session: ZooKeeperSession;
  readonly paths: SemaphorePaths;
  /** The lock znodes the provider has used, for the mutex (shared by the provider's attempts). */
  readonly knownZnodes: KnownLockZnodes;
}

// Each round is one wake-up (a watch, the deadline, a session change): far more than any real wait needs.
const MAX_ROUNDS = 100_000;
const MAX_CREATE_ATTEMPTS = 5;

/** One run of the semaphore recipe for one request (internal; see the module comment). */
export class SemaphoreAttempt {
  readonly #settings: SemaphoreAttemptSettings;
  readonly #request: BackendSemaphoreRequest;
  readonly #prefix: string;
  readonly #lease: OwnSequentialNode;
  #contended = false;
  #watch: OwnNodeWatch | undefined;

  constructor(settings: SemaphoreAttemptSettings, request: BackendSemaphoreRequest) {
    this.#settings = settings;
    this.#request = request;
    const names = leasePrefix(request.ownerId);
    this.#prefix = names.prefix;
    this.#lease = new OwnSequentialNode(settings.session, settings.paths.leases, names.guid, 'lease node', request.releaseLater);
  }

  /** Runs the attempt; resolves the held lease node, or `undefined` when the deadline passed first. */
  async run(): Promise<HeldNode | undefined> {
    const mutex = await this.#takeMutex();
    if (mutex === undefined) return undefined;
    // The mutex is ours only for this attempt: its deletion behind our back is no loss of a permit.
    mutex.watch.stop();
    let held: HeldNode | undefined;
    try {
      held = await this.#underMutex();
      return held;
    } finally {
      this.#lease.finish(held !== undefined);
      if (held === undefined) {
        this.#watch?.stop();
        await this.#lease.cleanup();
      }
      // Curator releases the mutex before returning a lease: the next acquirer may count at once.
      await this.#lease.cleanupWith(() => this.#lease.remove(mutex.nodePath));
    }
  }

  get #session(): ZooKeeperSession {
    return this.#settings.session;
  }

  #contendedOnce(): void {
    if (this.#contended) return;
    this.#contended = true;
    this.#request.contended();
  }

  #takeMutex(): Promise<HeldNode | undefined> {
    const { session, paths, knownZnodes } = this.#settings;
    // The mutex is taken on the semaphore's behalf: same owner (its node's uuid), deadline and signal.
    const mutexRequest = lockRequestFor(this.#request, undefined, () => this.#contendedOnce());
    return new LockAttempt({ session, root: paths.semaphore, lockPath: paths.locks, naming: 'curator', knownZnodes }, mutexRequest).run();
  }

  async #underMutex(): Promise<HeldNode | undefined> {
    const { waitSignal: signal, deadline, limit } = this.#request;
    // Full already and no time to wait (a try): nothing to create.
    if ((await this.#checkLimit()) >= limit && monotonicNow() >= deadline) {
      this.#contendedOnce();
      return undefined;
    }
    await this.#createLease();
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      if (signal.aborted) throw signal.reason;
      const name = this.#lease.name;
      if (name === undefined) throw new Error('unreachable: no lease node');
      const watch = this.#ownWatch(name);
      // Round 0 asks for our node's stat (the czxid) with the listing: a free permit costs no round trip more.
      const statRequest = round === 0 ? watch.read() : undefined;
      statRequest?.catch(() => undefined);
      // Subscribed before the watching listing is sent: a notification before its reply is not missed.
      const latch = new WatchLatch(this.#session, this.#settings.paths.leases);
      try {
        const children = await this.#session.request<string[]>(
          'listing semaphore leases',
          (done) => this.#session.listChildren(this.#settings.paths.leases, this.#session.watches.watcher, (error, list) => done(error, list ?? [])),
          { signal },
        );
        if (!children.includes(name)) throw this.#missing();
        // A second node of ours (a create the client retried by itself) would hold a permit for nothing.
        for (const child of children) {
          if (child !== name && this.#lease.isOurs(child)) this.#lease.removeLater(this.#lease.path(child));
        }
        // Curator's rule: every child counts, ours included.
        if (children.length <= this.#request.limit) {
          const stat: Stat | null = await (statRequest ?? watch.read());
          if (stat === null) throw this.#missing();
          return { nodePath: watch.path, czxid: czxidOf(stat), watch };
        }
        this.#contendedOnce();
        if (monotonicNow() >= deadline) return undefined;
        await latch.wait(deadline, signal);
      } finally {
        latch.stop();
      }
    }
    return undefined;
  }

  #missing(): LockError {
    const { key } = this.#request;
    return new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `the lease node of semaphore "${key}" disappeared`, { key });
  }

  #ownWatch(name: string): OwnNodeWatch {
    const path = this.#lease.path(name);
    if (this.#watch?.path === path) return this.#watch;
    this.#watch?.stop();
    this.#watch = new OwnNodeWatch(this.#session, path);
    return this.#watch;
  }

  /**
   * Refuses, before anything is taken, when a lease node of ours was written with another limit.
   * Run under the mutex: no lease can be created meanwhile, and each of ours was checked the same way
   * when it was created, so all of ours present agree with each other. Resolves how many lease
   * nodes there are.
   */
  async #checkLimit(): Promise<number> {
    const { leases } = this.#settings.paths;
    const { key, limit, waitSignal: signal } = this.#request;
    let children: string[];
    try {
      children = await this.#session.request<string[]>(
        'listing semaphore leases',
        (done) => this.#session.listChildren(leases, undefined, (error, list) => done(error, list ?? [])),
        { signal },
      );
    } catch (error) {
      if (zooKeeperCode(error) === Exception.NO_NODE) return 0;
      throw error;
    }
    // Pipelined: one round trip for all of them (at most limit + 1 nodes when everyone agrees).
    const data = await Promise.all(
      children.map((child) =>
        this.#session
          .request<Buffer | undefined>(
            'reading a semaphore lease',
            (done) => this.#session.client.getData(`${leases}/${child}`, (error, value) => done(error, value ?? undefined)),
            { signal },
          )
          .catch((error: unknown) => {
            // Released between the listing and the read.
            if (zooKeeperCode(error) === Exception.NO_NODE) return undefined;
            throw error;
          }),
      ),
    );
    for (const value of data) {
      const stored = decodeLeaseData(value)?.limit;
      if (stored !== undefined && stored !== limit) throw limitMismatchError(key, stored, limit);
    }
    return children.length;
  }

  /** Creates our lease node, finding it again if the reply was lost. */
  async #createLease(): Promise<void> {
    const { waitSignal: signal, limit, metadata, key } = this.#request;
    const { paths } = this.#settings;
    const data = encodeLeaseData({ limit, metadata });
    for (let attempt = 0; attempt < MAX_CREATE_ATTEMPTS; attempt += 1) {
      if (signal.aborted) throw signal.reason;
      try {
        const created = await this.#session.request<string>(
          'creating the lease node',
          (done) => this.#session.client.create(this.#lease.path(this.#prefix), data, this.#session.acl, CreateMode.EPHEMERAL_SEQUENTIAL, done),
          { late: (path) => this.#lease.adoptLate(path), signal },
        );
        this.#lease.created(created);
        return;
      } catch (error) {
        if (signal.aborted) {
          // The create may still be applied: cleanup looks for it, and a late answer deletes it.
          this.#lease.createMayHaveApplied();
          throw signal.reason;
        }
        const code = zooKeeperCode(error);
        if (code === Exception.NO_NODE) {
          await ensureLockParent(this.#session, paths.semaphore, paths.leases);
          continue;
        }
        if (code !== Exception.CONNECTION_LOSS && !(error instanceof RequestTimeoutError)) throw error;
        // The create may have been applied: look for our node by its unique prefix once connected.
        if (await this.#lease.findAfterLostReply(signal)) return;
      }
    }
    throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `could not create a lease node for semaphore "${key}"`, { key });
  }
}
