import {
  DRIFT_FIXED_MS,
  KeyCache,
  LockErrorCode,
  SlotList,
  backendUnavailableError,
  forbiddenError,
  keyConflictError,
  isLockError,
  lockLostError,
  monotonicNow,
  settledBy,
  validityDeadline,
  retryableFailure,
  waitForGrant,
  withRequestTimeout,
  type BackendAcquireRequest,
  type BackendCampaignRequest,
  type BackendGrant,
  type BackendSemaphoreRequest,
  type BackendWarning,
  type LockBackend,
  type LockError,
  type LeaderInfo,
  type LockInfo,
  type SemaphoreInfo,
  type Wakeup,
} from '@fencelock/core/adapter';
import {
  ExtendBatcher,
  MutexElections,
  HANDOFF_RESERVATION_MS,
  evictionPolicyWarning,
  extendManyScript,
  lineMember,
  mergeEvictionWarnings,
  inspectScript,
  redisLockScripts,
  redisKeyConflict,
  redisRefusal,
  refusalCause,
  ScriptRunner,
  directGrantTtlMs,
  type ClientStatus,
  type GrantWakeup,
  type LockClient,
  type ScriptArgument,
} from '@fencelock/redis-shared';
import { REDIS_CAPABILITIES } from './redis-capabilities.js';
import type { RedisConnection } from './redis-connection.js';
import { RedisGrant, type GrantingBackend } from './redis-grant.js';
import { redisElectionKeys } from './election-keys.js';
import { redisLockKeys, type RedisLockKeys } from './redis-keys.js';
import type { ResolvedRedisLockOptions } from './redis-lock-options.js';
import { RedisSemaphores } from './redis-semaphores.js';
import { ReleaseSubscriber } from './release-subscriber.js';

/** What one acquisition's attempts learned so far. */
interface AttemptState {
  /** Send time of the last attempt (monotonic ms). */
  sent: number;
  /** How many attempts were sent; the last one's number (attempts are numbered from 1). */
  count: number;
  /** Send time of the first attempt, when it registered as a waiter (−∞ otherwise). */
  firstSent: number;
  /**
   * Send times of the last {@link RECENT_SENDS} attempts after the first, by number modulo that size:
   * made by the second attempt (most acquisitions end with the first).
   */
  sends: number[] | undefined;
  /** The wake-up source of the wait, which brings direct grants (see #directGrant). */
  wakeup: GrantWakeup | undefined;
  /** Whether an attempt failed in a way that may still have taken the lock. */
  indeterminate: boolean;
  /** When the holder seen by the last attempt expires at the latest (monotonic ms), if it expires. */
  heldUntil: number | undefined;
  /** Whether an attempt may have registered the owner as a waiter (to undo when it stops waiting). */
  registered: boolean;
}

// A retry at a holder's expiry waits a little longer, for the server's clock running a little slow
// and its millisecond expiry precision: the fixed part of core's drift margin.
const EXPIRY_SLACK_MS = DRIFT_FIXED_MS;

// Send times kept per acquisition, to anchor a direct grant at the attempt whose ask it used: a grant
// names one of the last few attempts unless the waiter's process fell far behind its messages (then
// its next attempt takes the lock over instead).
const RECENT_SENDS = 8;

/**
 * The `LockBackend` over one Redis client (standalone or cluster, through its family's `LockClient`
 * seam): one script call per acquire / extend /
 * release, a shared subscriber for release notifications, connection events mapped to the handles'
 * `uncertain` / `recovered` / `lost` states.
 */
export class RedisLockBackend implements LockBackend, GrantingBackend {
  readonly name = 'redis';
  readonly capabilities = REDIS_CAPABILITIES;
  readonly #connection: RedisConnection;
  readonly #client: LockClient;
  readonly #options: ResolvedRedisLockOptions;
  readonly #subscriber: ReleaseSubscriber;
  readonly #registrationMs: number;
  readonly #barging: boolean;
  // The locks granted and not seen end yet: watched across reconnects.
  readonly #active = new SlotList<RedisGrant>();
  readonly #acquireScript: ScriptRunner;
  readonly #releaseScript: ScriptRunner;
  readonly #extendManyScript: ScriptRunner;
  readonly #inspectScript: ScriptRunner;
  readonly #extends: ExtendBatcher;
  readonly #keyCache: KeyCache<RedisLockKeys>;
  readonly #semaphores: RedisSemaphores;
  readonly #elections: MutexElections<RedisLockKeys>;
  // Whether the client bounds requests by requestTimeoutMs itself (a client we opened): then
  // #boundedScript and #bounded add no second timer.
  readonly #clientTimesOut: boolean;
  readonly #scriptsTimeOut: boolean;
  readonly #stopWatching: () => void;
  readonly #onStatus = (status: ClientStatus): void => {
    if (status === 'ready') {
      for (const lock of this.#active.snapshot()) void this.#recheck(lock);
    } else {
      for (const lock of this.#active.snapshot()) lock.observer.uncertain();
    }
    this.#semaphores.connectionChanged(status === 'ready');
  };

  constructor(connection: RedisConnection, options: ResolvedRedisLockOptions) {
    this.#connection = connection;
    this.#options = options;
    this.#keyCache = new KeyCache((key) => redisLockKeys(options.keyPrefix, key));
    // A waiter tries again within its longest backoff delay (or at a notification), and each try takes
    // at most one request timeout: its registration outlives the gap between two of its attempts.
    this.#registrationMs = Math.ceil(options.retry.maxDelayMs + 2 * options.requestTimeoutMs);
    this.#barging = options.handoff === 'barging';
    const client = connection.lockClient;
    this.#client = client;
    this.#acquireScript = new ScriptRunner(client, redisLockScripts.acquire);
    this.#releaseScript = new ScriptRunner(client, redisLockScripts.release);
    this.#extendManyScript = new ScriptRunner(client, extendManyScript);
    this.#inspectScript = new ScriptRunner(client, inspectScript);
    this.#extends = new ExtendBatcher(
      (keys, args) => this.#runScript(this.#extendManyScript, [keys.length, ...keys, ...args], `extending ${keys.length / 2} lock(s)`),
      { bySlot: client.isCluster, withMeta: true },
    );
    this.#scriptsTimeOut = client.boundsScripts;
    this.#clientTimesOut = client.boundsCommands;
    this.#subscriber = new ReleaseSubscriber(client, options.channel);
    this.#semaphores = new RedisSemaphores(client, options, this.#subscriber, (script, args, action, key) => this.#runScript(script, args, action, key));
    // An election is this backend's lock at the election's own keys (see election-keys.ts).
    this.#elections = new MutexElections((name) => redisElectionKeys(options.keyPrefix, name), {
      acquire: (request, keys) => this.#acquireAt(request, keys),
      inspect: (name, keys) => this.#inspectAt(name, keys),
    });
    // A client that was never connected (lazy, or a node-redis client nobody connected) would hold
    // every request back.
    client.connect();
    this.#stopWatching = client.onStatus(this.#onStatus);
  }

  acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    return this.#acquireAt(request, this.#keyCache.get(request.key));
  }

  // The lock protocol at `keys`: a lock's own keys, or an election's (see MutexElections).
  async #acquireAt(request: BackendAcquireRequest, keys: RedisLockKeys): Promise<BackendGrant | undefined> {
    const attempts: AttemptState = { sent: 0, count: 0, firstSent: Number.NEGATIVE_INFINITY, sends: undefined, wakeup: undefined, indeterminate: false, heldUntil: undefined, registered: false };
    // Counted before the first attempt is sent: a release announced between its reply and the wait
    // registered after it is still seen (see LocalWaiters.wakeup).
    const since = this.#subscriber.announcements;
    let grant: BackendGrant | undefined;
    try {
      // The first attempt is #attempt written out here, without the waiting loop and its wake-up
      // source: most acquisitions end with it, and every async call on the way costs a frame.
      let failure: unknown;
      try {
        const args = this.#attemptArgs(request, keys, attempts);
        let reply: unknown;
        try {
          try {
            reply = await this.#boundedScript(this.#acquireScript.run(args), 'acquiring lock', request.key);
          } catch (error) {
            // NOSCRIPT (a restarted or flushed server): once more as EVAL, which loads the script.
            reply = await this.#boundedScript(this.#acquireScript.runAgain(error, args), 'acquiring lock', request.key);
          }
        } catch (error) {
          throw this.#attemptFailed(error, request, keys, attempts);
        }
        grant = this.#outcome(reply, request, keys, attempts);
      } catch (error) {
        // A single try reports its failure; a waiting one retries a failed request like a held key.
        if (request.deadline <= attempts.sent || !retryableFailure(error)) throw error;
        failure = error;
      }
      if (grant === undefined && request.deadline > monotonicNow()) grant = await this.#waitForGrant(request, keys, attempts, since, failure);
      else if (grant === undefined && failure !== undefined) throw failure;
      return grant;
    } finally {
      // A waiter that stops waiting leaves the line, so that a free lock is not held back for it.
      // Leaving also releases a lock a release may have granted it directly meanwhile (a grant is made
      // while the registration lasts, and lasts a grant TTL at most). The call settles once the leave
      // is answered, so that a release sent after it (from any connection) cannot grant us the lock;
      // but never later than one request timeout past the end of its wait: its deadline (which the
      // attempt in flight then may have used up already), or the abort (after the attempt in flight
      // then, if any). A leave without an answer by then goes on in the background, retried by core
      // until the entry would lapse by itself.
      if (grant === undefined && attempts.registered) {
        const now = monotonicNow();
        const settleBy = Math.min(request.deadline, now) + this.#options.requestTimeoutMs;
        const leaving = request.releaseLater(() => this.#leaveLine(keys, request.ownerId, request.key), now + this.#registrationMs + HANDOFF_RESERVATION_MS);
        await settledBy(leaving, settleBy);
      }
      // An attempt whose outcome is unknown may have been applied (or may still be, by a paused
      // server). Once this acquisition is over without a grant, its owner id is never used to acquire
      // again, so core's retried release can only delete that stray lock; the SET, if it was applied,
      // was sent before now and expires a TTL later at the latest (a paused server applies it on
      // resuming, behind which the first release attempt is queued on the same connection).
      if (grant === undefined && attempts.indeterminate) {
        request.releaseLater(() => this.#releaseOnce(keys, request.ownerId, request.key), monotonicNow() + request.ttlMs);
      }
    }
  }

  // After a first attempt that found the key held (or failed while the caller waits): until the
  // deadline, a failed attempt (a reconnect, a timed-out request) is retried like a held key; only if
  // the last attempt failed is the failure reported (core's retryFailed).
  #waitForGrant(
    request: BackendAcquireRequest,
    keys: RedisLockKeys,
    attempts: AttemptState,
    since: number,
    failure: unknown,
  ): Promise<BackendGrant | undefined> {
    return waitForGrant(
      request,
      async () => {
        // A release may have granted the lock to us already: then no attempt is needed.
        const direct = this.#directGrant(request, keys, attempts);
        if (direct !== undefined) return direct;
        try {
          // An attempt that found the lock ours (granted while it was on its way) took it over.
          return (await this.#attempt(request, keys, attempts)) ?? this.#directGrant(request, keys, attempts);
        } catch (error) {
          // A grant announced while the attempt failed is ours all the same.
          const granted = retryableFailure(error) ? this.#directGrant(request, keys, attempts) : undefined;
          if (granted === undefined) throw error;
          return granted;
        }
      },
      // #attempt reports contention itself: it tells a held key from a failed request.
      {
        retry: this.#options.retry,
        wakeup: () => this.#wakeup(keys, request.ownerId, attempts, since),
        reportContention: false,
        afterFirstAttempt: true,
        retryFailed: retryableFailure,
        firstAttemptFailure: failure === undefined ? undefined : { error: failure },
      },
    );
  }

  async checkConfiguration(): Promise<readonly BackendWarning[]> {
    // Every master of a cluster holds locks: each one's policy counts.
    const servers = this.#client.masters();
    if (servers.length === 0) throw new Error('the cluster has not connected yet');
    return mergeEvictionWarnings(
      await Promise.all(
        servers.map((server) => evictionPolicyWarning((args) => this.#bounded(server.command(args), 'reading maxmemory-policy'), server.name)),
      ),
    );
  }

  inspect(key: string): Promise<LockInfo | undefined> {
    return this.#inspectAt(key, this.#keyCache.get(key));
  }

  async #inspectAt(key: string, keys: RedisLockKeys): Promise<LockInfo | undefined> {
    const reply = await this.#runScript(this.#inspectScript, [2, keys.lock, keys.meta], 'inspecting lock', key);
    if (!Array.isArray(reply)) return undefined;
    const [value, pttlReply, owner, token, metadata] = reply as (string | number | null)[];
    if (typeof value !== 'string') return undefined;
    const pttl = Number(pttlReply);
    // The metadata string describes our holder only while its owner is the lock's value; a foreign
    // SET-NX holder shows its value as the owner id, with no token.
    const ours = owner === value;
    return {
      key,
      holders: [
        {
          ownerId: value,
          mode: 'exclusive',
          fencingToken: ours && typeof token === 'string' ? BigInt(token) : undefined,
          remainingMs: Number.isFinite(pttl) && pttl >= 0 ? pttl : undefined,
          metadata: ours && typeof metadata === 'string' ? metadata : undefined,
        },
      ],
    };
  }

  acquireSemaphore(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    return this.#semaphores.acquire(request);
  }

  inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    return this.#semaphores.inspect(key);
  }

  campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    return this.#elections.campaign(request);
  }

  leader(name: string): Promise<LeaderInfo | undefined> {
    return this.#elections.leader(name);
  }

  async close(): Promise<void> {
    this.#stopWatching();
    this.#subscriber.close();
    this.#active.clear();
    this.#semaphores.clear();
    // Core made its last attempt at every pending release before closing the backend.
    if (this.#connection.owned) await this.#client.close(this.#options.requestTimeoutMs);
  }

  /**
   * Wakes a waiter on a release notification, after the polling delay, or just after the holder's
   * TTL runs out (for locks nobody releases: a crashed holder, a foreign lock), whichever is first.
   */
  #wakeup(keys: RedisLockKeys, ownerId: string, attempts: AttemptState, since: number): Wakeup {
    const notified = this.#subscriber.wakeup(keys.lock, ownerId, since);
    attempts.wakeup = notified;
    return {
      wait: (ms, signal) => {
        const untilExpiry = attempts.heldUntil === undefined ? ms : attempts.heldUntil - monotonicNow() + EXPIRY_SLACK_MS;
        return notified.wait(Math.max(0, Math.min(ms, untilExpiry)), signal);
      },
      close: () => notified.close(),
    };
  }

  /** One SET NX attempt. Resolves the grant, or `undefined` when the key is held by another owner. */
  async #attempt(request: BackendAcquireRequest, keys: RedisLockKeys, attempts: AttemptState): Promise<BackendGrant | undefined> {
    const args = this.#attemptArgs(request, keys, attempts);
    let reply: unknown;
    try {
      try {
        reply = await this.#boundedScript(this.#acquireScript.run(args), 'acquiring lock', request.key);
      } catch (error) {
        // NOSCRIPT (a restarted or flushed server): once more as EVAL, which loads the script.
        reply = await this.#boundedScript(this.#acquireScript.runAgain(error, args), 'acquiring lock', request.key);
      }
    } catch (error) {
      throw this.#attemptFailed(error, request, keys, attempts);
    }
    return this.#outcome(reply, request, keys, attempts);
  }

  // The acquire script's arguments for one attempt, whose send time it records.
  #attemptArgs(request: BackendAcquireRequest, keys: RedisLockKeys, attempts: AttemptState): ScriptArgument[] {
    const sent = monotonicNow();
    attempts.sent = sent;
    attempts.count += 1;
    // An attempt that will wait if it fails registers as a waiter until after its next attempt at the latest.
    const register = request.deadline > sent ? this.#registrationMs : 0;
    const { fenceCounterTtlMs } = this.#options;
    const tag = this.#subscriber.lineTag;
    // A barging provider leaves out the reservation key: the script then neither honours a
    // reservation nor ends one (it lapses by itself). One literal each: no array growing per attempt.
    if (this.#barging) {
      if (register > 0) attempts.registered = true;
      const args: ScriptArgument[] = [4, keys.lock, keys.fence, keys.meta, keys.waiters, request.ownerId, request.ttlMs, '1', register, fenceCounterTtlMs, tag];
      if (request.metadata !== undefined) args.push('', request.metadata);
      return args;
    }
    // A waiting attempt asks to be granted the lock by the release that finds it at the head of the
    // line, and remembers its send time: that grant's validity starts there (see #directGrant).
    let ask = '';
    if (register > 0) {
      attempts.registered = true;
      if (attempts.count === 1) attempts.firstSent = sent;
      else (attempts.sends ??= new Array<number>(RECENT_SENDS))[attempts.count % RECENT_SENDS] = sent;
      ask = `${attempts.count}:${directGrantTtlMs(request.ttlMs)}`;
    }
    const args: ScriptArgument[] = [
      6, keys.lock, keys.fence, keys.meta, keys.waiters, keys.reserved, keys.grants,
      request.ownerId, request.ttlMs, '1', register, fenceCounterTtlMs, tag, ask,
    ];
    if (request.metadata !== undefined) args.push(request.metadata);
    return args;
  }

  /**
   * The lock a release granted to this waiter in the release script (announced on our channel), if
   * one came. Its validity starts at the send time of the attempt whose ask the release used: the
   * server had processed that attempt before the grant, so the grant TTL runs out no earlier. A
   * grant that names an attempt we no longer know, or whose validity has run out by now, is not
   * taken here: the next attempt finds the lock ours and takes it over with a validity of its own.
   * The grant TTL is short (a waiter that died in line holds the lock back no longer than a
   * reservation would): core extends a grant whose first validity is that short to the lock's TTL a
   * third of the way through it, so a lock released before then (most hand-offs) costs no extension.
   */
  #directGrant(request: BackendAcquireRequest, keys: RedisLockKeys, attempts: AttemptState): BackendGrant | undefined {
    const direct = attempts.wakeup?.takeGrant();
    if (direct === undefined) return undefined;
    const number = direct.attempt;
    if (number < 1 || number > attempts.count || number <= attempts.count - RECENT_SENDS) return undefined;
    const grantTtlMs = directGrantTtlMs(request.ttlMs);
    const sent = (number === 1 ? attempts.firstSent : attempts.sends?.[number % RECENT_SENDS]) ?? Number.NEGATIVE_INFINITY;
    const validUntil = validityDeadline(sent, grantTtlMs, this.#options.clockDriftFactor);
    if (validUntil <= monotonicNow()) return undefined;
    const grant = new RedisGrant(this, request, keys, BigInt(direct.token), validUntil, grantTtlMs < request.ttlMs);
    this.#active.add(grant);
    return grant;
  }

  // An attempt's request failed. Indeterminate: the server may have applied it, or may still (a
  // paused server). A later attempt of this acquisition takes such a stray lock over (same owner id);
  // what is left when the acquisition ends without a grant goes to core's retried release (see acquire()).
  #attemptFailed(error: unknown, request: BackendAcquireRequest, keys: RedisLockKeys, attempts: AttemptState): LockError {
    const refused = this.#refused(error, 'acquiring lock', request.key);
    if (refused !== undefined) return refused;
    attempts.indeterminate = true;
    // Found part way through the script, which may have written before (core's release cleans that up).
    const where = `the lock key "${keys.lock}" or one of its side keys ("${keys.fence.replace(':fence:', ':*:')}")`;
    return this.#conflict(error, 'acquiring lock', request.key, where) ?? backendUnavailableError(`acquiring lock "${request.key}" failed`, error, request.key);
  }

  /**
   * `LOCK_FORBIDDEN` when Redis refused this identity or its certificates: in the reply (NOPERM,
   * WRONGPASS, NOAUTH), or, for a request that failed while the client cannot connect, in the reason
   * its connection was refused. Nothing was applied then, and retrying cannot help.
   */
  #refused(error: unknown, action: string, key: string | undefined): LockError | undefined {
    if (isLockError(error, LockErrorCode.FORBIDDEN)) return error;
    const detail = redisRefusal(error) ?? this.#client.connectionRefusal();
    return detail === undefined ? undefined : forbiddenError('Redis', describeRequest(action, key), detail, refusalCause(error), key);
  }

  // The keys of a lock, semaphore or election named `key`, in words: its own, or a side key of ours.
  #keysOf(key: string | undefined): string {
    const name = `${this.#options.keyPrefix}${key ?? ''}`;
    return `a key it uses ("${name}", or a side key "{…}fencelock:…:${name}")`;
  }

  /** `LOCK_KEY_CONFLICT` when Redis answered WRONGTYPE: `where` holds a value something else wrote. */
  #conflict(error: unknown, action: string, key: string | undefined, where: string): LockError | undefined {
    const detail = redisKeyConflict(error);
    return detail === undefined ? undefined : keyConflictError(describeRequest(action, key), where, detail, refusalCause(error), key);
  }

  // What the acquire script answered: the grant, or `undefined` when the key is held by another owner.
  #outcome(reply: unknown, request: BackendAcquireRequest, keys: RedisLockKeys, attempts: AttemptState): BackendGrant | undefined {
    if (reply === null || reply === undefined || Array.isArray(reply)) {
      // Held by another owner; the reply carries its remaining TTL (the server measured it before
      // answering, so it has expired by reply time + pttl at the latest).
      const pttl = Array.isArray(reply) ? Number(reply[0]) : Number.NaN;
      attempts.heldUntil = Number.isFinite(pttl) && pttl >= 0 ? monotonicNow() + pttl : undefined;
      request.contended();
      return undefined;
    }
    const validUntil = validityDeadline(attempts.sent, request.ttlMs, this.#options.clockDriftFactor);
    const grant = new RedisGrant(this, request, keys, BigInt(String(reply)), validUntil);
    this.#active.add(grant);
    return grant;
  }

  /** Extensions asked for in the same turn (core runs due renewals together) share one script call. */
  async extendLock(lock: RedisGrant, ttlMs: number): Promise<number> {
    let outcome;
    try {
      outcome = await this.#extends.extend({ lockKey: lock.keys.lock, metaKey: lock.keys.meta, ownerId: lock.ownerId, ttlMs });
    } catch (error) {
      throw this.#refused(error, 'extending lock', lock.key) ?? backendUnavailableError(`extending lock "${lock.key}" failed`, error, lock.key);
    }
    if (!outcome.extended) {
      this.#active.delete(lock);
      throw lockLostError(lock.key, 'taken-over');
    }
    return validityDeadline(outcome.sent, ttlMs, this.#options.clockDriftFactor);
  }

  /** One bounded attempt; a failure rejects, and core retries it in the background. */
  releaseLock(lock: RedisGrant): Promise<boolean> {
    this.#active.delete(lock);
    return this.#releaseOnce(lock.keys, lock.ownerId, lock.key);
  }

  // With `registration`, also takes that registration out of the line first (see #leaveLine).
  async #releaseOnce(keys: RedisLockKeys, ownerId: string, key: string, registration = ''): Promise<boolean> {
    const args: ScriptArgument[] = [
      6, keys.lock, keys.waiters, keys.reserved, keys.grants, keys.fence, keys.meta,
      ownerId, this.#options.channel, HANDOFF_RESERVATION_MS, this.#options.fenceCounterTtlMs, registration,
    ];
    let reply: unknown;
    try {
      try {
        reply = await this.#boundedScript(this.#releaseScript.run(args), 'releasing lock', key);
      } catch (error) {
        // NOSCRIPT (a restarted or flushed server): once more as EVAL, which loads the script.
        reply = await this.#boundedScript(this.#releaseScript.runAgain(error, args), 'releasing lock', key);
      }
    } catch (error) {
      throw this.#refused(error, 'releasing lock', key) ?? backendUnavailableError(`releasing lock "${key}" failed`, error, key);
    }
    return Number(reply) === 1;
  }

  /**
   * One bounded attempt to take `ownerId` out of the line of waiters and to release the lock a
   * release may have granted it directly on the way (passed on to the next in line); rejects on
   * failure (core retries it).
   */
  async #leaveLine(keys: RedisLockKeys, ownerId: string, key: string): Promise<void> {
    await this.#releaseOnce(keys, ownerId, key, lineMember(ownerId, this.#subscriber.lineTag));
  }

  /** After a reconnect: is each lock still ours? */
  async #recheck(lock: RedisGrant): Promise<void> {
    try {
      const value = await this.#bounded(this.#client.command(['GET', lock.keys.lock], lock.keys.lock), 'checking lock', lock.key);
      if (!this.#active.has(lock)) return;
      if (value === lock.ownerId) {
        lock.observer.recovered();
      } else {
        this.#active.delete(lock);
        lock.observer.lost(lockLostError(lock.key, 'taken-over'));
      }
    } catch {
      // Still unreachable: the handle stays uncertain and its deadline decides.
    }
  }

  #closed<T>(request: Promise<T>, action: string, key: string | undefined): Promise<T> {
    request.catch(() => undefined);
    return Promise.reject(new Error(`${describeRequest(action, key)} failed: the connection is closed`));
  }

  // A script's request: bounded already when the client bounds its scripts, else as any other.
  #boundedScript<T>(request: Promise<T>, action: string, key?: string): Promise<T> {
    if (!this.#scriptsTimeOut) return this.#bounded(request, action, key);
    return this.#client.status === 'closed' ? this.#closed(request, action, key) : request;
  }

  // A script outside the acquire and release paths, bounded, once more as EVAL after NOSCRIPT.
  async #runScript(script: ScriptRunner, args: readonly ScriptArgument[], action: string, key?: string): Promise<unknown> {
    try {
      try {
        return await this.#boundedScript(script.run(args), action, key);
      } catch (error) {
        return await this.#boundedScript(script.runAgain(error, args), action, key);
      }
    } catch (error) {
      throw this.#refused(error, action, key) ?? this.#conflict(error, action, key, this.#keysOf(key)) ?? error;
    }
  }

  /**
   * Bounds a request by `requestTimeoutMs` with core's per-request timeout, whatever the client's own
   * settings are (a client we opened with that very `commandTimeout` already does it: no second
   * timer per request then). What it does (`action`, and the lock `key` if any) is only put into
   * words when a message needs it.
   */
  #bounded<T>(request: Promise<T>, action: string, key?: string): Promise<T> {
    // A client closed for good (closed by its owner, or a crash simulated by disconnect()) would
    // queue the request until the timeout on a Cluster: fail at once instead.
    if (this.#client.status === 'closed') return this.#closed(request, action, key);
    if (this.#clientTimesOut) return request;
    return withRequestTimeout(request, this.#options.requestTimeoutMs, describeRequest(action, key));
  }
}

function describeRequest(action: string, key: string | undefined): string {
  return key === undefined ? action : `${action} "${key}"`;
}

