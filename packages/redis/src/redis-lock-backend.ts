import {
  DRIFT_FIXED_MS,
  LockErrorCode,
  backendUnavailableError,
  isLockError,
  lockLostError,
  monotonicNow,
  validityDeadline,
  waitForGrant,
  withRequestTimeout,
  type BackendAcquireRequest,
  type BackendGrant,
  type BackendWarning,
  type GrantObserver,
  type LockBackend,
  type LockInfo,
  type Wakeup,
} from '@fencelock/core/adapter';
import {
  ExtendBatcher,
  HANDOFF_RESERVATION_MS,
  evictionPolicyWarning,
  extendManyCommand,
  lineMember,
  mergeEvictionWarnings,
  inspectScript,
  redisLockScripts,
  registerRedisLockScripts,
  scriptCall,
  variadicCommandName,
} from '@fencelock/redis-shared';
import { once } from 'node:events';
import type { Cluster, Redis } from 'ioredis';
import { REDIS_CAPABILITIES } from './redis-capabilities.js';
import { closeRedisConnection, type RedisConnection } from './redis-connection.js';
import { redisLockKeys, type RedisLockKeys } from './redis-keys.js';
import type { ResolvedRedisLockOptions } from './redis-lock-options.js';
import { ReleaseSubscriber } from './release-subscriber.js';

/** A lock this backend granted and has not seen end yet: watched across reconnects. */
interface ActiveLock {
  readonly key: string;
  readonly keys: RedisLockKeys;
  readonly ownerId: string;
  readonly observer: GrantObserver;
}

/** What one acquisition's attempts learned so far. */
interface AttemptState {
  /** Send time of the last attempt (monotonic ms). */
  sent: number;
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

// Lock keys whose side keys are remembered (see #keysOf); the cache is emptied when it is full.
const KEY_CACHE_SIZE = 1_024;

/**
 * The `LockBackend` over one ioredis `Redis` or `Cluster`: one script call per acquire / extend /
 * release, a shared subscriber for release notifications, connection events mapped to the handles'
 * `uncertain` / `recovered` / `lost` states.
 */
export class RedisLockBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities = REDIS_CAPABILITIES;
  readonly #connection: RedisConnection;
  readonly #options: ResolvedRedisLockOptions;
  readonly #subscriber: ReleaseSubscriber;
  readonly #registrationMs: number;
  readonly #active = new Set<ActiveLock>();
  readonly #acquireCall: (...args: (string | number)[]) => Promise<unknown>;
  readonly #releaseCall: (...args: (string | number)[]) => Promise<unknown>;
  readonly #extends: ExtendBatcher;
  readonly #inspectCall: (...args: (string | number)[]) => Promise<unknown>;
  readonly #keyCache = new Map<string, RedisLockKeys>();
  // Whether ioredis already bounds every request by requestTimeoutMs (a client we opened ourselves,
  // not a Cluster, whose own queue is not bounded): then #bounded adds no second timer.
  readonly #clientTimesOut: boolean;
  readonly #onClose = (): void => {
    for (const lock of this.#active) lock.observer.uncertain();
  };
  readonly #onReady = (): void => {
    for (const lock of [...this.#active]) void this.#recheck(lock);
  };

  constructor(connection: RedisConnection, options: ResolvedRedisLockOptions) {
    this.#connection = connection;
    this.#options = options;
    // A waiter tries again within its longest backoff delay (or at a notification), and each try takes
    // at most one request timeout: its registration outlives the gap between two of its attempts.
    this.#registrationMs = Math.ceil(options.retry.maxDelayMs + 2 * options.requestTimeoutMs);
    const { client } = connection;
    registerRedisLockScripts(client);
    this.#acquireCall = scriptCall(client, variadicCommandName(redisLockScripts.acquire));
    this.#releaseCall = scriptCall(client, variadicCommandName(redisLockScripts.release));
    const extendMany = extendManyCommand(client);
    this.#extends = new ExtendBatcher(
      (keys, args) => this.#bounded(extendMany(keys, args), `extending ${keys.length / 2} lock(s)`),
      { bySlot: client.isCluster, withMeta: true },
    );
    this.#inspectCall = scriptCall(client, inspectScript.name);
    this.#clientTimesOut = connection.owned && !client.isCluster && (client as Redis).options.commandTimeout === options.requestTimeoutMs;
    this.#subscriber = new ReleaseSubscriber(client, options.channel);
    client.on('close', this.#onClose);
    client.on('ready', this.#onReady);
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    const keys = this.#keysOf(request.key);
    const attempts: AttemptState = { sent: monotonicNow(), indeterminate: false, heldUntil: undefined, registered: false };
    let grant: BackendGrant | undefined;
    try {
      grant = await this.#acquireUntilDeadline(request, keys, attempts);
      return grant;
    } finally {
      // A waiter that stops waiting leaves the line, so that a free lock is not held back for it. It is
      // cleanup: the call settles first (within its wait and the attempt in flight, not a request
      // more), and core sends it in the background, retried until the entry would lapse by itself.
      if (grant === undefined && attempts.registered) {
        request.releaseLater(() => this.#leaveLine(keys, request.ownerId), monotonicNow() + this.#registrationMs);
      }
      // An attempt whose outcome is unknown may have been applied (or may still be, by a paused
      // server). Once this acquisition is over without a grant, its owner id is never used to acquire
      // again, so core's retried release can only delete that stray lock; the SET, if it was applied,
      // was sent before now and expires a TTL later at the latest (a paused server applies it on
      // resuming, behind which the first release attempt is queued on the same connection).
      if (grant === undefined && attempts.indeterminate) {
        request.releaseLater(() => this.#releaseOnce(keys, request.ownerId), monotonicNow() + request.ttlMs);
      }
    }
  }

  async #acquireUntilDeadline(
    request: BackendAcquireRequest,
    keys: RedisLockKeys,
    attempts: AttemptState,
  ): Promise<BackendGrant | undefined> {
    if (request.deadline <= monotonicNow()) return this.#attempt(request, keys, attempts);
    // While waiting, a failed attempt (a reconnect, a timed-out request) is retried like a held key
    // until the deadline; only if the last attempt failed is the failure reported.
    let lastError: unknown;
    const grant = await waitForGrant(
      request,
      async () => {
        try {
          const granted = await this.#attempt(request, keys, attempts);
          lastError = undefined;
          return granted;
        } catch (error) {
          if (isLockError(error) && error.code !== LockErrorCode.BACKEND_UNAVAILABLE) throw error;
          lastError = error;
          return undefined;
        }
      },
      // #attempt reports contention itself: it tells a held key from a failed request.
      { retry: this.#options.retry, wakeup: () => this.#wakeup(keys, request.ownerId, attempts), reportContention: false },
    );
    if (grant === undefined && lastError !== undefined) throw lastError;
    return grant;
  }

  async checkConfiguration(): Promise<readonly BackendWarning[]> {
    const { client } = this.#connection;
    // Every master of a cluster holds locks: each one's policy counts.
    // isCluster, not instanceof: the user's client may come from another copy of ioredis.
    const servers: Redis[] = client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
    if (servers.length === 0) throw new Error('the cluster has not connected yet');
    return mergeEvictionWarnings(
      await Promise.all(
      servers.map((server) =>
        evictionPolicyWarning(
          (args) => this.#bounded(server.call(args[0]!, ...args.slice(1)), 'reading maxmemory-policy'),
          `${server.options.host ?? 'localhost'}:${server.options.port ?? 6379}`,
        ),
      ),
      ),
    );
  }

  async inspect(key: string): Promise<LockInfo | undefined> {
    const keys = this.#keysOf(key);
    const reply = await this.#bounded(this.#inspectCall(keys.lock, keys.meta), `inspecting lock "${key}"`);
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

  async close(): Promise<void> {
    const { client } = this.#connection;
    client.off('close', this.#onClose);
    client.off('ready', this.#onReady);
    this.#subscriber.close();
    this.#active.clear();
    // Core made its last attempt at every pending release before closing the backend.
    await closeRedisConnection(this.#connection, this.#options.requestTimeoutMs);
  }

  /**
   * Wakes a waiter on a release notification, after the polling delay, or just after the holder's
   * TTL runs out (for locks nobody releases: a crashed holder, a foreign lock), whichever is first.
   */
  #wakeup(keys: RedisLockKeys, ownerId: string, attempts: AttemptState): Wakeup {
    const notified = this.#subscriber.wakeup(keys.lock, ownerId);
    return {
      wait: (ms, signal) => {
        const untilExpiry = attempts.heldUntil === undefined ? ms : attempts.heldUntil - monotonicNow() + EXPIRY_SLACK_MS;
        return notified.wait(Math.max(0, Math.min(ms, untilExpiry)), signal);
      },
      close: () => notified.close(),
    };
  }

  /** One SET NX attempt. Resolves the grant, or `undefined` when the key is held by another owner. */
  async #attempt(
    request: BackendAcquireRequest,
    keys: RedisLockKeys,
    attempts: AttemptState,
  ): Promise<BackendGrant | undefined> {
    const { key, ownerId, ttlMs, metadata } = request;
    const sent = monotonicNow();
    attempts.sent = sent;
    // An attempt that will wait if it fails registers as a waiter until after its next attempt at the latest.
    const register = request.deadline > sent ? this.#registrationMs : 0;
    if (register > 0) attempts.registered = true;
    const args: (string | number)[] = [
      5,
      keys.lock,
      keys.fence,
      keys.meta,
      keys.waiters,
      keys.reserved,
      ownerId,
      ttlMs,
      '1',
      register,
      this.#options.fenceCounterTtlMs,
      this.#subscriber.lineTag,
    ];
    if (metadata !== undefined) args.push(metadata);
    let reply: unknown;
    try {
      reply = await this.#bounded(this.#acquireCall(...args), `acquiring lock "${key}"`);
    } catch (error) {
      // Indeterminate: the server may have applied it, or may still (a paused server). A later
      // attempt of this acquisition takes such a stray lock over (same owner id); what is left when
      // the acquisition ends without a grant goes to core's retried release (see acquire()).
      attempts.indeterminate = true;
      throw backendUnavailableError(`acquiring lock "${key}" failed`, error, key);
    }
    if (reply === null || reply === undefined || Array.isArray(reply)) {
      // Held by another owner; the reply carries its remaining TTL (the server measured it before
      // answering, so it has expired by reply time + pttl at the latest).
      const pttl = Array.isArray(reply) ? Number(reply[0]) : Number.NaN;
      attempts.heldUntil = Number.isFinite(pttl) && pttl >= 0 ? monotonicNow() + pttl : undefined;
      request.contended();
      return undefined;
    }
    const fencingToken = BigInt(String(reply));
    const lock: ActiveLock = { key, keys, ownerId, observer: request.observer };
    this.#active.add(lock);
    return {
      fencingToken,
      validUntil: validityDeadline(sent, ttlMs, this.#options.clockDriftFactor),
      extend: (nextTtlMs) => this.#extend(lock, nextTtlMs),
      release: () => this.#release(lock),
    };
  }

  // Extensions asked for in the same turn (core runs due renewals together) share one script call.
  async #extend(lock: ActiveLock, ttlMs: number): Promise<number> {
    let outcome;
    try {
      outcome = await this.#extends.extend({ lockKey: lock.keys.lock, metaKey: lock.keys.meta, ownerId: lock.ownerId, ttlMs });
    } catch (error) {
      throw backendUnavailableError(`extending lock "${lock.key}" failed`, error, lock.key);
    }
    if (!outcome.extended) {
      this.#active.delete(lock);
      throw lockLostError(lock.key, 'taken-over');
    }
    return validityDeadline(outcome.sent, ttlMs, this.#options.clockDriftFactor);
  }

  // One bounded attempt; a failure rejects, and core retries it in the background.
  async #release(lock: ActiveLock): Promise<boolean> {
    this.#active.delete(lock);
    try {
      return await this.#releaseOnce(lock.keys, lock.ownerId);
    } catch (error) {
      throw backendUnavailableError(`releasing lock "${lock.key}" failed`, error, lock.key);
    }
  }

  async #releaseOnce(keys: RedisLockKeys, ownerId: string): Promise<boolean> {
    const reply = await this.#bounded(
      this.#releaseCall(3, keys.lock, keys.waiters, keys.reserved, ownerId, this.#options.channel, HANDOFF_RESERVATION_MS),
      'releasing a lock',
    );
    return Number(reply) === 1;
  }

  /** One bounded attempt to take `ownerId` out of the line of waiters; rejects on failure (core retries it). */
  async #leaveLine(keys: RedisLockKeys, ownerId: string): Promise<void> {
    await this.#bounded(this.#connection.client.zrem(keys.waiters, lineMember(ownerId, this.#subscriber.lineTag)), 'leaving the line of waiters');
  }

  /** After a reconnect: is each lock still ours? */
  async #recheck(lock: ActiveLock): Promise<void> {
    try {
      const value = await this.#bounded(this.#connection.client.get(lock.keys.lock), `checking lock "${lock.key}"`);
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

  /**
   * The side keys of `key`, remembered for the next acquisitions of the same key: building them (a
   * CRC over the key's bytes, four strings) is a noticeable share of an uncontended acquire.
   */
  #keysOf(key: string): RedisLockKeys {
    let keys = this.#keyCache.get(key);
    if (keys === undefined) {
      keys = redisLockKeys(this.#options.keyPrefix, key);
      if (this.#keyCache.size >= KEY_CACHE_SIZE) this.#keyCache.clear();
      this.#keyCache.set(key, keys);
    }
    return keys;
  }

  /**
   * Bounds a request by `requestTimeoutMs` with core's per-request timeout, whatever the client's own
   * settings are (a client we opened with that very `commandTimeout` already does it: no second
   * timer per request then).
   */
  #bounded<T>(request: Promise<T>, what: string): Promise<T> {
    // A client closed for good (closed by its owner, or a crash simulated by disconnect()) would
    // queue the request until the timeout on a Cluster: fail at once instead.
    if (this.#connection.client.status === 'end') {
      request.catch(() => undefined);
      return Promise.reject(new Error(`${what} failed: the connection is closed`));
    }
    if (this.#clientTimesOut) return request;
    return withRequestTimeout(request, this.#options.requestTimeoutMs, what);
  }
}
