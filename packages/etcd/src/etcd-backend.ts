import {
  type BackendAcquireRequest,
  type BackendCampaignRequest,
  type BackendGrant,
  type BackendSemaphoreRequest,
  type GrantObserver,
  type LockBackend,
  type LockCapabilities,
  type LockHolder,
  type LeaderInfo,
  type LockInfo,
  type LockMode,
  type SemaphoreHolder,
  type SemaphoreInfo,
  KeyCache,
  LockError,
  LockErrorCode,
  backendUnavailableError,
  backoffDelayMs,
  isLockError,
  limitMismatchError,
  lockLostError,
  monotonicNow,
  normalizeCapabilities,
  sleep,
  waitFor,
} from '@fencelock/core/adapter';
import { EtcdLeaseInvalidError, type IKeyValue, type Watcher } from 'etcd3';
import { type EtcdCalls, createRevision } from './etcd-calls.js';
import { HolderWatch, HolderWatchOpenings, type HolderWatchEvents } from './holder-watch.js';
import { type KeyEncoding, electionName, lockName, semaphoreName, tombstoneRoot } from './key-encoding.js';
import { watchElectionRange } from './leader-watch.js';
import { asRefusal } from './refusals.js';
import { LeaseSession } from './lease-session.js';
import { decodeLockValue, decodeSemaphoreValue, encodeLockValue, encodeSemaphoreValue } from './lock-value.js';
import {
  type LockRange,
  cancelUncertain,
  checkTurn,
  deleteOwn,
  enqueue,
  firstWaiter,
  listWaiters,
  lockRange,
  stillHeld,
} from './revision-queue.js';
import { type SemaphoreTurn, checkContender, enqueueContender, semaphoreHolders } from './semaphore-queue.js';

/** What an etcd provider guarantees. */
export const ETCD_CAPABILITIES: LockCapabilities = normalizeCapabilities({
  // The create revision of the holder's own key: from etcd's raft log, increasing across the cluster.
  fencing: 'global',
  lossDetection: true,
  extend: true,
  notify: true,
  fifo: true,
  readWrite: true,
  expiry: 'session',
  // etcd leases are whole seconds, and etcd raises anything below 2 s to 2 s.
  ttlResolutionMs: 1000,
  minTtlMs: 2000,
  // Each holder watches its own key (from 25 ms after the grant): a delete or an overwrite behind its
  // back is heard as soon as etcd's event arrives.
  deletionNotice: 'watch',
  // The mutex recipe with the first N permits holding instead of the first key (semaphore-queue.ts).
  semaphore: 'multi-permit',
  // etcd's `concurrency.Election` (what `etcdctl elect` runs): the mutex recipe on the election's
  // range, the value stored raw; `observe` is told of changes by a watch on that range.
  election: 'notified',
});

/** The settings the backend runs with (validated by the provider). */
export interface EtcdBackendSettings {
  readonly calls: EtcdCalls;
  readonly ownsClient: boolean;
  readonly keyPrefix: string;
  readonly keyEncoding: KeyEncoding;
  readonly sessionTtlSeconds: number;
  /** The bound of each etcd request, in ms; keepalives get at most this (less on a short lease). */
  readonly requestTimeoutMs: number;
  readonly recheckIntervalMs: number;
}

/** A lock this backend holds, by owner id: what a guarded etcd transaction compares on. */
export interface HeldLock {
  readonly key: string;
  readonly waiterKey: string;
  readonly createRevision: bigint;
  readonly leaseId: string;
}

// Bounds on loops that are otherwise bounded by the deadline and the signal.
const MAX_ROUNDS = 1_000;
const MAX_WAIT_STEPS = 1_000_000;
const MAX_LATE_REQUEUES = 3;
const RETRY = { initialDelayMs: 20, maxDelayMs: 1_000, factor: 2 };
// A holder's watch on its own key opens this long after the grant (from the key's creation, so a
// delete meanwhile is still heard, that much later): shorter holds cost no watch at all.
const HOLDER_WATCH_DELAY_MS = 25;
// A waiter blocked by more keys than this (a semaphore with a large limit) watches its queue's whole
// range with one watch instead of one watch per key: etcd3 attaches watches one at a time, and each
// wait step would open them all again. Every deletion in the range then wakes it.
const MAX_KEY_WATCHES = 16;

type WaitOutcome = 'granted' | 'requeue' | undefined;

/** What lock, semaphore and campaign attempts all carry (a semaphore has no mode, a campaign no metadata either). */
type ContenderRequest = Omit<BackendAcquireRequest, 'mode' | 'metadata'>;

/**
 * Where a contender stands: holding when `blockers` is empty, else waiting for the deletion of one of
 * them; or refused (`refusal` is thrown once its key is removed).
 */
interface Standing {
  readonly blockers: readonly IKeyValue[];
  readonly refusal?: LockError;
}

/** One queue a contender joins: a lock's (revision-queue.ts) or a semaphore's (semaphore-queue.ts). */
interface ContenderQueue {
  readonly range: LockRange;
  /** What the put is, for a refusal's message. */
  readonly what: string;
  /** What is held, for error messages: `lock "k"`, `semaphore "k"`, `leadership of "k"`. */
  readonly subject: string;
  enqueue(key: Buffer, leaseId: string): Promise<{ readonly created: false } | { readonly created: true; readonly revision: bigint; readonly standing: Standing }>;
  check(key: Buffer, revision: bigint): Promise<{ readonly gone: true } | { readonly gone: false; readonly standing: Standing }>;
}

/**
 * The etcd lock backend: etcd's `concurrency.Mutex` recipe (one lease per session, waiter keys
 * ordered by create revision, each waiter watching only its predecessor), plus readers, and counting
 * semaphores on the same recipe (the first N permits hold instead of the first key).
 */
export class EtcdBackend implements LockBackend {
  readonly name = 'etcd';
  readonly capabilities = ETCD_CAPABILITIES;
  readonly #settings: EtcdBackendSettings;
  readonly #calls: EtcdCalls;
  // Each lock key's range, named once: the key's escape and the range's buffers cost on every acquire.
  readonly #lockRanges: KeyCache<LockRange>;
  readonly #held = new Map<string, HeldLock>();
  readonly #sessions = new Set<LeaseSession>();
  // The watches of held keys, so that close() leaves none on a client it does not own.
  readonly #watches = new Set<HolderWatch>();
  readonly #watchOpenings = new HolderWatchOpenings(HOLDER_WATCH_DELAY_MS);
  #streamAnchor: Watcher | undefined;
  #session: LeaseSession | undefined;
  #opening: Promise<LeaseSession> | undefined;
  // How to stop each election watch still in place, for close().
  readonly #leaderWatches = new Set<() => void>();
  #closed = false;

  constructor(settings: EtcdBackendSettings) {
    this.#settings = settings;
    this.#calls = settings.calls;
    this.#lockRanges = new KeyCache((key) => lockRange(lockName(key, settings.keyPrefix, settings.keyEncoding), settings.keyPrefix));
  }

  /** The lease TTL etcd granted to the current session, in ms, once one is open. */
  get sessionTimeoutMs(): number | undefined {
    return this.#session?.ttlMs;
  }

  /** The etcd-side identity of a lock this backend holds for `ownerId`, if it still does. */
  held(ownerId: string): HeldLock | undefined {
    return this.#held.get(ownerId);
  }

  // Async: a key refused by the encoding (thrown while naming the range) rejects, never throws.
  async acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    const range = this.#lockRanges.get(request.key);
    const { mode } = request;
    const value = encodeLockValue({ ownerId: request.ownerId, mode, metadata: request.metadata });
    return this.#rounds(request, this.#mutexQueue(range, value, mode, 'lock', `lock "${request.key}"`));
  }

  /**
   * Campaigns as etcd's `concurrency.Election` does: a candidacy key `<election>/<lease hex>` on the
   * session lease holding the value as raw bytes (what `etcdctl elect` stores and prints), elected
   * once no key of the election's range is older (the exclusive mutex recipe), term = its create
   * revision. The key names its owner: it is ours by its lease, so the value needs no bookkeeping.
   */
  async campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    const range = this.#electionRange(request.key);
    const value = Buffer.from(request.value, 'utf8');
    return this.#rounds(request, this.#mutexQueue(range, value, 'exclusive', 'election', `leadership of "${request.key}"`));
  }

  /** The leader of election `name`: the oldest candidacy (by create revision), whoever wrote it. */
  async leader(name: string): Promise<LeaderInfo | undefined> {
    const first = await firstWaiter(this.#calls, this.#electionRange(name)).catch((error: unknown) => {
      throw asRefusal(error, "reading the election's keys");
    });
    return first === undefined ? undefined : { name, value: first.value.toString('utf8'), term: createRevision(first) };
  }

  /** Calls `onChange` on every change in election `name`'s range, and after a reconnection (leader-watch.ts). */
  async watchLeader(name: string, onChange: () => void, signal: AbortSignal): Promise<void> {
    if (this.#closed) throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the etcd provider is closed');
    const { prefix } = this.#electionRange(name);
    const stop = await watchElectionRange(() => this.#calls.watchPrefix(prefix), onChange, signal, this.#settings.requestTimeoutMs).catch(
      (error: unknown) => {
        throw asRefusal(error, "watching the election's keys");
      },
    );
    if (signal.aborted) return;
    this.#leaderWatches.add(stop);
    signal.addEventListener('abort', () => this.#leaderWatches.delete(stop), { once: true });
  }

  #electionRange(name: string): LockRange {
    return lockRange(electionName(name, this.#settings.keyPrefix), this.#settings.keyPrefix);
  }

  /** The queue of a mutex (revision-queue.ts): a lock's, or an election's (always exclusive). */
  #mutexQueue(range: LockRange, value: Buffer, mode: LockMode, noun: string, subject: string): ContenderQueue {
    const calls = this.#calls;
    const standing = (blocker: IKeyValue | undefined): Standing => ({ blockers: blocker === undefined ? [] : [blocker] });
    return {
      range,
      what: `queueing for the ${noun} (a transaction on its keys)`,
      subject,
      enqueue: async (key, leaseId) => {
        const enqueued = await enqueue(calls, range, key, value, leaseId, mode);
        return enqueued.created ? { created: true, revision: enqueued.revision, standing: standing(enqueued.blocker) } : enqueued;
      },
      check: async (key, revision) => {
        const turn = await checkTurn(calls, range, key, revision, mode);
        return turn.gone ? turn : { gone: false, standing: standing(turn.blocker) };
      },
    };
  }

  /**
   * Takes `request.permits` of semaphore `request.key`: one contender key on the session lease under
   * the semaphore's own range (see `semaphoreName`), holding once the permits of every earlier
   * contender and its own fit in the limit (semaphore-queue.ts). Same rounds, waiting, clean-up and
   * loss detection as a lock.
   */
  async acquireSemaphore(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    const range = lockRange(semaphoreName(request.key, this.#settings.keyPrefix), this.#settings.keyPrefix);
    const calls = this.#calls;
    const { key, limit, permits } = request;
    const value = encodeSemaphoreValue({ ownerId: request.ownerId, limit, permits, metadata: request.metadata });
    const standing = (turn: SemaphoreTurn): Standing => {
      if (turn.kind === 'granted') return { blockers: [] };
      if (turn.kind === 'blocked') return { blockers: turn.window };
      return { blockers: [], refusal: limitMismatchError(key, turn.limit, limit) };
    };
    return this.#rounds(request, {
      range,
      what: 'queueing for the semaphore (a transaction on its keys)',
      subject: `semaphore "${key}"`,
      enqueue: async (contender, leaseId) => {
        const enqueued = await enqueueContender(calls, range, contender, value, leaseId, limit, permits);
        return enqueued.created ? { created: true, revision: enqueued.revision, standing: standing(enqueued.turn) } : enqueued;
      },
      check: async (contender, revision) => {
        const checked = await checkContender(calls, range, contender, revision, limit, permits);
        return checked.gone ? checked : { gone: false, standing: standing(checked.turn) };
      },
    });
  }

  /** The holders of semaphore `key` (the first contenders whose permits fit) and their limit. */
  async inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    const range = lockRange(semaphoreName(key, this.#settings.keyPrefix), this.#settings.keyPrefix);
    const contenders = await listWaiters(this.#calls, range).catch((error: unknown) => {
      throw asRefusal(error, "reading the semaphore's keys");
    });
    const { limit, holders } = semaphoreHolders(contenders);
    if (holders.length === 0) return undefined;
    const remaining = await this.#remainingByLease(holders.map((holder) => holder.kv));
    return {
      key,
      limit,
      holders: holders.map(({ kv, permits }): SemaphoreHolder => {
        const value = decodeSemaphoreValue(kv.value);
        return {
          ownerId: value?.ownerId ?? kv.key.toString('utf8'),
          mode: 'semaphore',
          permits,
          fencingToken: createRevision(kv),
          remainingMs: remaining.get(kv.lease),
          metadata: value?.metadata,
        };
      }),
    };
  }

  /**
   * Enqueue-and-wait attempts until one settles: transient failures and lost sessions are retried,
   * with jittered backoff, until the deadline.
   */
  async #rounds(request: ContenderRequest, queue: ContenderQueue): Promise<BackendGrant | undefined> {
    let lastError: unknown;
    let lateRequeues = 0;
    // The call's abort as core's waits take it: `request.signal` (made on first read, an
    // AbortController each) is never read here, as nothing is handed to etcd3 with it.
    const { waitSignal } = request;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      // Not before the first round: core refused an aborted signal before calling, and checks the call
      // after the attempt.
      if (round > 0 && waitSignal.aborted) throw waitSignal.reason;
      let requeue = false;
      try {
        const outcome = await this.#attempt(request, queue);
        if (outcome !== 'requeue') return outcome;
        requeue = true;
        lastError = undefined;
      } catch (error) {
        if (waitSignal.aborted) throw waitSignal.reason;
        if (this.#closed || (isLockError(error) && error.code !== LockErrorCode.BACKEND_UNAVAILABLE)) throw error;
        lastError = error;
      }
      // Transient failures and lost sessions are retried, with jittered backoff, until the deadline.
      const remaining = request.deadline - monotonicNow();
      // A re-queue (our lease ended under us) is not contention: even a single try gets a few more
      // attempts on a fresh lease rather than reporting the key as held.
      if (requeue && remaining <= 0 && lateRequeues < MAX_LATE_REQUEUES) {
        lateRequeues += 1;
        continue;
      }
      if (remaining <= 0) break;
      if (lastError !== undefined) await sleep(Math.min(backoffDelayMs(round, RETRY), remaining), waitSignal);
    }
    if (lastError !== undefined) throw lastError;
    return undefined;
  }

  async inspect(key: string): Promise<LockInfo | undefined> {
    const range = this.#lockRanges.get(key);
    const waiters = await listWaiters(this.#calls, range).catch((error: unknown) => {
      throw asRefusal(error, "reading the lock's keys");
    });
    const first = waiters[0];
    if (first === undefined) return undefined;
    const firstValue = decodeLockValue(first.value);
    // One exclusive holder (ours or foreign), or every reader before the first writer.
    const holding: IKeyValue[] = [];
    if (firstValue?.mode !== 'shared') holding.push(first);
    else {
      for (const kv of waiters) {
        if (decodeLockValue(kv.value)?.mode !== 'shared') break;
        holding.push(kv);
      }
    }
    const remaining = await this.#remainingByLease(holding);
    const holders: LockHolder[] = holding.map((kv) => {
      const value = decodeLockValue(kv.value);
      return {
        // A foreign holder (etcd's Go Mutex stores an empty value) is named by its key.
        ownerId: value?.ownerId ?? (kv.value.length > 0 ? kv.value.toString('utf8') : kv.key.toString('utf8')),
        mode: value?.mode ?? 'exclusive',
        fencingToken: createRevision(kv),
        remainingMs: remaining.get(kv.lease),
        metadata: value?.metadata,
      };
    });
    return { key, holders };
  }

  /** The remaining TTL of each holder's lease, in ms (`undefined` when unknown or unleased). */
  async #remainingByLease(holding: readonly IKeyValue[]): Promise<Map<string, number | undefined>> {
    const remaining = new Map<string, number | undefined>();
    await Promise.all(
      [...new Set(holding.map((kv) => kv.lease))].map(async (lease) => {
        if (lease === '0' || lease === '') return;
        const seconds = await this.#calls.leaseTimeToLive(lease).catch(() => -1);
        remaining.set(lease, seconds >= 0 ? seconds * 1000 : undefined);
      }),
    );
    return remaining;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const opening = this.#opening;
    if (opening !== undefined) await opening.catch(() => undefined);
    for (const watch of this.#watches) watch.stop();
    this.#watches.clear();
    this.#watchOpenings.clear();
    for (const stop of this.#leaderWatches) stop();
    this.#leaderWatches.clear();
    const anchor = this.#streamAnchor;
    this.#streamAnchor = undefined;
    if (anchor !== undefined) void anchor.cancel().catch(() => undefined);
    await Promise.all([...this.#sessions].map((session) => session.close()));
    this.#held.clear();
    if (this.#settings.ownsClient) this.#calls.client.close();
  }

  async #openSession(request: ContenderRequest): Promise<LeaseSession> {
    if (this.#closed) throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the etcd provider is closed');
    const current = this.#session;
    if (current?.alive) return current;
    const { sessionTtlSeconds, requestTimeoutMs } = this.#settings;
    // A lease whose grant may have landed unseen is revoked through core, with the request that opened it.
    const releaseLater = request.releaseLater.bind(request);
    this.#opening ??= LeaseSession.open(this.#calls, sessionTtlSeconds, requestTimeoutMs, releaseLater, (ended) => {
      this.#sessions.delete(ended);
      if (this.#session === ended) this.#session = undefined;
    })
      .then(async (session) => {
        this.#sessions.add(session);
        if (this.#closed) {
          await session.close();
          throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the etcd provider is closed');
        }
        this.#session = session;
        return session;
      })
      .finally(() => {
        this.#opening = undefined;
      });
    return this.#opening;
  }

  /** One enqueue-and-wait on the current session: a grant, `undefined` at the deadline, or `requeue`. */
  async #attempt(request: ContenderRequest, queue: ContenderQueue): Promise<BackendGrant | undefined | 'requeue'> {
    const session = await this.#openSession(request);
    const name = session.claimName(`${queue.range.prefixText}${session.hex}`);
    const waiterKey = Buffer.from(name, 'utf8');
    let revision: bigint | undefined;
    let granted = false;
    let uncertain = false;
    try {
      let enqueued;
      try {
        enqueued = await queue.enqueue(waiterKey, session.id);
      } catch (error) {
        if (error instanceof EtcdLeaseInvalidError) {
          // Refused outright (nothing applied): our lease is gone. Start again on a new one.
          session.abandon();
          return 'requeue';
        }
        // Refused to this identity: nothing was applied, and asking again gets the same answer.
        const refused = asRefusal(error, queue.what);
        if (refused !== error) throw refused;
        // The put may have been applied although we saw no reply.
        uncertain = true;
        throw error;
      }
      if (!enqueued.created) {
        // A leftover of ours (or its tombstone) holds this name: keep the name burnt, take another.
        uncertain = true;
        return 'requeue';
      }
      revision = enqueued.revision;
      // A refusal (a semaphore's limit mismatch) is thrown before any wait; our key goes in `finally`.
      if (enqueued.standing.refusal !== undefined) throw enqueued.standing.refusal;
      let outcome: WaitOutcome = enqueued.standing.blockers.length === 0 ? 'granted' : undefined;
      if (outcome === undefined) {
        request.contended();
        if (request.deadline <= monotonicNow()) return undefined;
        outcome = await this.#waitTurn(request, session, queue, waiterKey, revision, enqueued.standing.blockers);
      }
      if (outcome !== 'granted') return outcome;
      // Never hand out a lock on a lease we already gave up on: re-queue on a new one instead.
      if (!session.alive) return 'requeue';
      granted = true;
      return this.#grant(request, queue.subject, session, name, waiterKey, revision);
    } finally {
      if (!granted) await this.#cleanup(request, session, name, waiterKey, revision, uncertain);
    }
  }

  /**
   * Waits until nobody blocks us: watches only the deletion of the blocking keys (a lock's waiter
   * watches the key just before its own; a semaphore's, the few nearest keys that keep it out: no
   * herd), then re-checks. The watches start at "now" (a watch from a past revision is served by
   * etcd's slower unsynced path), so after they are confirmed we re-check that the blockers still exist.
   */
  async #waitTurn(
    request: ContenderRequest,
    session: LeaseSession,
    queue: ContenderQueue,
    waiterKey: Buffer,
    revision: bigint,
    firstBlockers: readonly IKeyValue[],
  ): Promise<WaitOutcome> {
    let blockers = firstBlockers;
    for (let step = 0; step < MAX_WAIT_STEPS && blockers.length > 0; step += 1) {
      // A deletion may come before the wait starts (the watches are made before the re-check): latched.
      let woken = false;
      let onWake: (() => void) | undefined;
      const wake = (): void => {
        woken = true;
        onWake?.();
      };
      let watchers: readonly (Watcher | undefined)[] = [];
      try {
        // Without a watch (it could not be created in time) we still re-check on the poll interval.
        watchers =
          blockers.length > MAX_KEY_WATCHES
            ? [await this.#calls.watchPrefixDeletions(queue.range.prefix, wake).catch(() => undefined)]
            : await Promise.all(blockers.map((blocker) => this.#calls.watchDeletion(blocker.key, wake).catch(() => undefined)));
        let turn = await queue.check(waiterKey, revision);
        if (turn.gone) return this.#keyGone(session);
        if (!session.alive) return 'requeue';
        if (turn.standing.refusal !== undefined) throw turn.standing.refusal;
        if (sameKeys(turn.standing.blockers, blockers)) {
          const leave = session.join(wakeOnLoss(wake));
          try {
            await waitFor({
              deadline: Math.min(request.deadline, monotonicNow() + this.#settings.recheckIntervalMs),
              signal: request.waitSignal,
              until: (resolve) => {
                if (woken) resolve();
                else onWake = resolve;
                return () => {
                  onWake = undefined;
                };
              },
            });
          } finally {
            leave();
          }
          if (!session.alive) return 'requeue';
          if (request.deadline <= monotonicNow()) return undefined;
          turn = await queue.check(waiterKey, revision);
          if (turn.gone) return this.#keyGone(session);
          if (!session.alive) return 'requeue';
          if (turn.standing.refusal !== undefined) throw turn.standing.refusal;
        }
        blockers = turn.standing.blockers;
      } finally {
        // Never awaited: the hand-off must not wait for etcd to confirm the cancellation.
        for (const watcher of watchers) if (watcher !== undefined) void watcher.cancel().catch(() => undefined);
      }
    }
    return blockers.length === 0 ? 'granted' : undefined;
  }

  /**
   * Our waiter key vanished: almost always because our lease ended (expired, revoked). Ask etcd now,
   * so the next attempt runs on a new lease instead of failing on the dead one.
   */
  async #keyGone(session: LeaseSession): Promise<'requeue'> {
    await session.keepAlive().catch(() => undefined);
    return 'requeue';
  }

  #grant(request: ContenderRequest, subject: string, session: LeaseSession, name: string, waiterKey: Buffer, revision: bigint): BackendGrant {
    const { key, ownerId, observer } = request;
    const calls = this.#calls;
    const held: HeldLock = { key, waiterKey: name, createRevision: revision, leaseId: session.id };
    this.#held.set(ownerId, held);
    // True once our key is known gone (deleted, lost with the lease, taken over): nothing is left to do.
    let ended = false;
    let leave = (): void => undefined;
    let watch: HolderWatch | undefined;
    const unwatch = (): void => {
      if (watch === undefined) return;
      watch.stop();
      this.#watches.delete(watch);
      watch = undefined;
    };
    // `keepName`: the key still exists but is someone else's now; this lease must never reuse its
    // name, or a later attempt's clean-up could delete it.
    const end = (keepName = false): void => {
      if (ended) return;
      ended = true;
      unwatch();
      this.#forget(ownerId, held);
      leave();
      if (!keepName) session.releaseName(name);
    };
    // Bound to the lease until the key is known gone: a release that core retries in the background
    // follows the lease's renewals (it may go on while the lease lives) and hears of its loss.
    leave = session.join({
      lost: (error) => {
        if (ended) return;
        end();
        observer.lost(lockLostError(key, 'session-lost', error));
      },
      uncertain: () => observer.uncertain(),
      recovered: () => observer.recovered(),
      renewed: (validUntil) => observer.renewed(validUntil),
    });
    // Someone deleting or overwriting our key (an operator, another tool) is heard of at once.
    if (!ended) {
      watch = this.#watchOwnKey(session, waiterKey, revision, {
        taken: (how) => {
          if (ended) return;
          const takenOver = (): void => {
            if (ended) return;
            end(how === 'overwritten');
            observer.lost(lockLostError(key, 'taken-over'));
          };
          if (how === 'overwritten') {
            takenOver();
            return;
          }
          // A revoked or expired lease deletes every key on it: one keepalive (shared by all of them)
          // lets the lease report that as what it is, to every lock on it, before the next acquire
          // tries it. A live lease means this key alone was deleted.
          session.keepAlive().then(takenOver, takenOver);
        },
        uncertain: () => {
          if (!ended) observer.uncertain();
        },
        recovered: () => {
          if (!ended) observer.recovered();
        },
      });
    }
    return {
      fencingToken: revision,
      validUntil: session.validUntil,
      extend: async (): Promise<number> => {
        if (ended) throw lockLostError(key, 'taken-over');
        // One keepalive now; the session's TTL is fixed, so `ttlMs` cannot change it.
        const [renewal, exists] = await Promise.allSettled([session.keepAlive(), stillHeld(calls, waiterKey, revision)]);
        if (renewal.status === 'rejected') {
          if (!session.alive) throw lockLostError(key, 'session-lost', renewal.reason);
          throw backendUnavailableError(`extending ${subject} failed`, renewal.reason, key);
        }
        if (exists.status === 'rejected') throw backendUnavailableError(`extending ${subject} failed`, exists.reason, key);
        if (!exists.value) {
          // Gone, or written by someone else since: their key now, its name not ours to reuse.
          end(true);
          throw lockLostError(key, 'taken-over');
        }
        return renewal.value;
      },
      // One bounded attempt (the request timeout); core retries a rejection in the background.
      release: async (): Promise<boolean> => {
        if (ended) return false;
        // Our own delete is no loss: stop listening before sending it.
        unwatch();
        // From here on the handle is no longer held: a guarded transaction must not use it.
        this.#forget(ownerId, held);
        // The lease is gone or being revoked: its keys go with it.
        if (!session.alive) {
          end();
          return false;
        }
        let deleted: boolean;
        try {
          deleted = await deleteOwn(calls, waiterKey, revision);
        } catch (error) {
          throw backendUnavailableError(`releasing ${subject} failed`, error, key);
        }
        // Not deleted: the key is gone, or someone else's now (written since), its name not ours to reuse.
        end(!deleted);
        return deleted;
      },
    };
  }

  #watchOwnKey(session: LeaseSession, waiterKey: Buffer, revision: bigint, events: HolderWatchEvents): HolderWatch {
    const calls = this.#calls;
    const watch = new HolderWatch(
      waiterKey,
      revision,
      {
        watch: (watchedKey, fromRevision) => {
          this.#holdWatchStream();
          return calls.watchKey(watchedKey, fromRevision);
        },
        read: (readKey) => calls.readKey(readKey),
        alive: () => session.alive && !this.#closed,
      },
      events,
      this.#watchOpenings,
    );
    this.#watches.add(watch);
    return watch;
  }

  // Once a provider watches held keys, its watch stream stays open until close(): holds that come
  // and go would otherwise open and close a stream each.
  #holdWatchStream(): void {
    if (this.#streamAnchor !== undefined || this.#closed) return;
    const anchor = this.#calls.holdWatchStream();
    // Cancelled by etcd (a refusal): the next watch makes another.
    anchor.on('error', () => {
      if (this.#streamAnchor === anchor) this.#streamAnchor = undefined;
    });
    this.#streamAnchor = anchor;
  }

  #forget(ownerId: string, held: HeldLock): void {
    if (this.#held.get(ownerId) === held) this.#held.delete(ownerId);
  }

  /**
   * Removes what a failed, timed-out or aborted attempt created, before the attempt settles when etcd
   * answers. What cannot be removed now (etcd unreachable, or an enqueue whose outcome is unknown) is
   * handed to core, which retries it in the background. Never rejects.
   */
  async #cleanup(
    request: ContenderRequest,
    session: LeaseSession,
    name: string,
    waiterKey: Buffer,
    revision: bigint | undefined,
    uncertain: boolean,
  ): Promise<void> {
    const attempt = async (): Promise<void> => {
      // The lease is gone or being revoked (the provider closing included): its keys go with it.
      if (!session.alive) {
        session.releaseName(name);
        return;
      }
      try {
        await this.#cleanupOnce(session, name, waiterKey, revision, uncertain);
      } catch (error) {
        // A lease etcd no longer knows has no keys left to clean.
        if (!(error instanceof EtcdLeaseInvalidError)) throw error;
        session.abandon();
        session.releaseName(name);
      }
    };
    // Our leftover lives exactly as long as the lease, which `attempt` checks first: core's bound on
    // attempts is what ends the retries while the lease is still kept alive.
    const releaseLater = (): void => void request.releaseLater(attempt, Number.POSITIVE_INFINITY);
    if (uncertain) {
      releaseLater();
      return;
    }
    await attempt().catch(releaseLater);
  }

  async #cleanupOnce(session: LeaseSession, name: string, waiterKey: Buffer, revision: bigint | undefined, uncertain: boolean): Promise<void> {
    if (uncertain || revision === undefined) {
      // The name stays reserved: its tombstone lives with the lease.
      await cancelUncertain(this.#calls, tombstoneRoot(this.#settings.keyPrefix), waiterKey, session.id);
      return;
    }
    // Not deleted: the key is gone, or someone else's now (written since); its name stays burnt.
    if (await deleteOwn(this.#calls, waiterKey, revision)) session.releaseName(name);
  }
}

/** True when both lists name the same keys, each with the same create revision, in the same order. */
function sameKeys(a: readonly IKeyValue[], b: readonly IKeyValue[]): boolean {
  return a.length === b.length && a.every((kv, index) => kv.key.equals(b[index]!.key) && kv.create_revision === b[index]!.create_revision);
}

/** A waiter's place on the lease: only its loss matters (the waiter re-queues on a new lease). */
function wakeOnLoss(wake: () => void): GrantObserver {
  return { lost: wake, uncertain: () => undefined, recovered: () => undefined, renewed: () => undefined };
}
