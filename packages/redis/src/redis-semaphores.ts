import {
  LockErrorCode,
  backendUnavailableError,
  isLockError,
  limitMismatchError,
  lockLostError,
  monotonicNow,
  validityDeadline,
  retryableFailure,
  waitForGrant,
  SlotList,
  type BackendGrant,
  type GrantObserver,
  type BackendSemaphoreRequest,
  type RetryOptions,
  type SemaphoreInfo,
} from '@fencelock/core/adapter';
import { ScriptRunner, type LockClient, type ScriptArgument } from '@fencelock/redis-shared';
import type { ReleaseSubscriber } from './release-subscriber.js';
import { redisSemaphoreKeys, type RedisSemaphoreKeys } from './semaphore-keys.js';
import { semaphoreAcquireScript, semaphoreExtendScript, semaphoreInspectScript, semaphoreReleaseScript } from './semaphore-scripts.js';

/** Runs a script once, bounded by the request timeout, again as EVAL after NOSCRIPT (the backend's). */
export type RunScript = (script: ScriptRunner, args: readonly ScriptArgument[], action: string, key: string) => Promise<unknown>;

/** What the semaphores need of the backend's settings. */
export interface RedisSemaphoreSettings {
  readonly keyPrefix: string;
  readonly channel: string;
  readonly fenceCounterTtlMs: number;
  readonly clockDriftFactor: number;
  readonly retry: RetryOptions;
}

/**
 * The counting semaphores of `@fencelock/redis` (see semaphore-scripts.ts for the protocol): one
 * script call per attempt, extension and release; waiters retry with backoff and wake at once when a
 * release of the same semaphore is announced on the provider's channel (the release subscriber the
 * locks use). Waiting is not FIFO (as for the provider's locks): after a release, the fastest waiter
 * whose permits fit wins.
 */
export class RedisSemaphores {
  readonly #settings: RedisSemaphoreSettings;
  readonly #subscriber: ReleaseSubscriber;
  readonly #run: RunScript;
  readonly #acquire: ScriptRunner;
  readonly #extend: ScriptRunner;
  readonly #release: ScriptRunner;
  readonly #inspect: ScriptRunner;
  // Held permits, so that a dropped link makes them uncertain and a reconnect rechecks them.
  readonly #active = new SlotList<RedisSemaphoreGrant>();

  constructor(client: LockClient, settings: RedisSemaphoreSettings, subscriber: ReleaseSubscriber, run: RunScript) {
    this.#settings = settings;
    this.#subscriber = subscriber;
    this.#run = run;
    this.#acquire = new ScriptRunner(client, semaphoreAcquireScript);
    this.#extend = new ScriptRunner(client, semaphoreExtendScript);
    this.#release = new ScriptRunner(client, semaphoreReleaseScript);
    this.#inspect = new ScriptRunner(client, semaphoreInspectScript);
  }

  /** `LockBackend.acquireSemaphore`: tries, then waits until the deadline (notified, or polling). */
  async acquire(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    const keys = redisSemaphoreKeys(this.#settings.keyPrefix, request.key);
    const since = this.#subscriber.announcements;
    let indeterminate = false;
    let heldUntil: number | undefined;
    const attempt = async (): Promise<BackendGrant | undefined> => {
      const sent = monotonicNow();
      let reply: unknown;
      try {
        reply = await this.#run(this.#acquire, this.#acquireArgs(request, keys), 'acquiring semaphore', request.key);
      } catch (error) {
        // Refused to this identity (see the backend's #runScript): nothing ran, and retrying cannot help.
        if (isLockError(error, LockErrorCode.FORBIDDEN)) throw error;
        // The script may have run: a later attempt takes it over (same owner id), or clean-up frees it.
        indeterminate = true;
        // A value something else wrote at one of its keys (see the backend's #runScript): waiting cannot help.
        if (isLockError(error, LockErrorCode.KEY_CONFLICT)) throw error;
        throw backendUnavailableError(`acquiring semaphore "${request.key}" failed`, error, request.key);
      }
      if (Array.isArray(reply)) {
        const [kind, value] = reply as unknown[];
        if (kind === 'limit') throw limitMismatchError(request.key, Number(value), request.limit);
        const ms = Number(value);
        heldUntil = Number.isFinite(ms) ? monotonicNow() + ms : undefined;
        request.contended();
        return undefined;
      }
      const validUntil = validityDeadline(sent, request.ttlMs, this.#settings.clockDriftFactor);
      const granted = new RedisSemaphoreGrant(this, request.key, keys, request.ownerId, request.observer, BigInt(String(reply)), validUntil);
      this.#active.add(granted);
      return granted;
    };
    let grant: BackendGrant | undefined;
    try {
      grant = await waitForGrant(request, attempt, {
        retry: this.#settings.retry,
        reportContention: false,
        // A failed request is retried like a full semaphore until the deadline (see the catch above).
        retryFailed: retryableFailure,
        wakeup: () => {
          const notified = this.#subscriber.wakeup(keys.holders, request.ownerId, since);
          return {
            // A holder nobody releases (a crashed one) frees its permits at its expiry: try again then.
            wait: (ms, signal) => notified.wait(Math.max(0, Math.min(ms, heldUntil === undefined ? ms : heldUntil - monotonicNow() + 2)), signal),
            close: () => notified.close(),
          };
        },
      });
      return grant;
    } finally {
      if (grant === undefined && indeterminate) {
        request.releaseLater(() => this.releaseOnce(keys, request.ownerId, request.key), monotonicNow() + request.ttlMs);
      }
    }
  }

  /** `LockBackend.inspectSemaphore`. */
  async inspect(key: string): Promise<SemaphoreInfo | undefined> {
    const keys = redisSemaphoreKeys(this.#settings.keyPrefix, key);
    const reply = await this.#run(this.#inspect, [2, keys.holders, keys.info], 'inspecting semaphore', key);
    if (!Array.isArray(reply) || reply.length === 0) return undefined;
    const fields = reply.map(String);
    const holders: SemaphoreInfo['holders'][number][] = [];
    let limit = 0;
    for (let index = 0; index + 3 < fields.length; index += 4) {
      // info: `<limit> <token>[ <metadata>]`
      const [ownerId, permits, remaining, info] = [fields[index]!, fields[index + 1]!, fields[index + 2]!, fields[index + 3]!];
      const match = /^(\d+) (\d+)(?: (.*))?$/s.exec(info);
      if (match !== null) limit = Number(match[1]);
      holders.push({
        ownerId,
        mode: 'semaphore',
        permits: Number(permits),
        fencingToken: match === null ? undefined : BigInt(match[2]!),
        remainingMs: Number(remaining),
        metadata: match?.[3],
      });
    }
    return holders.length === 0 ? undefined : { key, limit, holders };
  }

  /** Prolongs `grant`'s permits; `LOCK_LOST` when they are gone. */
  async extend(grant: RedisSemaphoreGrant, ttlMs: number): Promise<number> {
    const sent = monotonicNow();
    let reply: unknown;
    try {
      reply = await this.#run(this.#extend, [2, grant.keys.holders, grant.keys.info, grant.ownerId, ttlMs], 'extending semaphore', grant.key);
    } catch (error) {
      throw isLockError(error) ? error : backendUnavailableError(`extending semaphore "${grant.key}" failed`, error, grant.key);
    }
    if (Number(reply) !== 1) {
      this.#active.delete(grant);
      throw lockLostError(grant.key, 'taken-over');
    }
    return validityDeadline(sent, ttlMs, this.#settings.clockDriftFactor);
  }

  /** Gives `grant`'s permits back (one bounded attempt; core retries a failure). */
  release(grant: RedisSemaphoreGrant): Promise<boolean> {
    this.#active.delete(grant);
    return this.releaseOnce(grant.keys, grant.ownerId, grant.key);
  }

  /**
   * The link to Redis went down (`ready` false: every held permit is uncertain, valid until its
   * deadline) or came back (`ready` true: each is checked, then recovered or lost).
   */
  connectionChanged(ready: boolean): void {
    for (const grant of this.#active.snapshot()) {
      if (ready) void this.#recheck(grant);
      else grant.observer.uncertain();
    }
  }

  /** Forgets every held permit (the backend is closing). */
  clear(): void {
    this.#active.clear();
  }

  // After a reconnect: does the holder still hold? (An expired holder not yet swept still shows in
  // the info hash; its handle's own validity deadline ends it.)
  async #recheck(grant: RedisSemaphoreGrant): Promise<void> {
    try {
      const held = await this.#run(this.#inspect, [2, grant.keys.holders, grant.keys.info], 'checking semaphore', grant.key);
      if (!this.#active.has(grant)) return;
      if (Array.isArray(held) && held.some((field, index) => index % 4 === 0 && String(field) === grant.ownerId)) {
        grant.observer.recovered();
      } else {
        this.#active.delete(grant);
        grant.observer.lost(lockLostError(grant.key, 'taken-over'));
      }
    } catch {
      // Still unreachable: the handle stays uncertain and its deadline decides.
    }
  }

  /** One bounded attempt to free this owner's permits; rejects on failure (core retries it). */
  async releaseOnce(keys: RedisSemaphoreKeys, ownerId: string, key: string): Promise<boolean> {
    try {
      return Number(await this.#run(this.#release, [2, keys.holders, keys.info, ownerId, this.#settings.channel], 'releasing semaphore', key)) === 1;
    } catch (error) {
      throw isLockError(error, LockErrorCode.BACKEND_UNAVAILABLE) ? error : backendUnavailableError(`releasing semaphore "${key}" failed`, error, key);
    }
  }

  #acquireArgs(request: BackendSemaphoreRequest, keys: RedisSemaphoreKeys): ScriptArgument[] {
    const args: ScriptArgument[] = [
      3,
      keys.holders,
      keys.info,
      keys.fence,
      request.ownerId,
      request.permits,
      request.limit,
      request.ttlMs,
      this.#settings.fenceCounterTtlMs,
    ];
    if (request.metadata !== undefined) args.push(request.metadata);
    return args;
  }
}

/** Permits the semaphores granted. */
class RedisSemaphoreGrant implements BackendGrant {
  readonly key: string;
  readonly keys: RedisSemaphoreKeys;
  readonly ownerId: string;
  readonly observer: GrantObserver;
  readonly fencingToken: bigint;
  readonly validUntil: number;
  listSlot = -1;
  readonly #semaphores: RedisSemaphores;

  constructor(semaphores: RedisSemaphores, key: string, keys: RedisSemaphoreKeys, ownerId: string, observer: GrantObserver, fencingToken: bigint, validUntil: number) {
    this.#semaphores = semaphores;
    this.key = key;
    this.keys = keys;
    this.ownerId = ownerId;
    this.observer = observer;
    this.fencingToken = fencingToken;
    this.validUntil = validUntil;
  }

  extend(ttlMs: number): Promise<number> {
    return this.#semaphores.extend(this, ttlMs);
  }

  release(): Promise<boolean> {
    return this.#semaphores.release(this);
  }
}
