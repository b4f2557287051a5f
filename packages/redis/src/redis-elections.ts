import type { BackendAcquireRequest, BackendCampaignRequest, BackendGrant, LeaderInfo, LockInfo } from '@fencelock/core/adapter';
import { redisElectionKeys } from './election-keys.js';
import type { RedisLockKeys } from './redis-keys.js';

/** The backend's lock protocol, run at keys the caller chooses (an election's instead of a lock's). */
export interface LockProtocolAt {
  /** Acquires as `LockBackend.acquire` does, at `keys` (same waiting, cleanup and active set). */
  acquire(request: BackendAcquireRequest, keys: RedisLockKeys): Promise<BackendGrant | undefined>;
  /** Reads the holder at `keys` as `LockBackend.inspect` does, reported under `key`. */
  inspect(key: string, keys: RedisLockKeys): Promise<LockInfo | undefined>;
}

/**
 * Leader election over the provider's own lock protocol: an election of a name is the exclusive lock
 * at the election's keys (see election-keys.ts), a namespace apart from the locks and semaphores of
 * that name. Nothing here is a protocol of its own: the leader is the lock's holder, the value its
 * metadata, the term its fencing token (the election's own per-key counter, so terms only increase
 * while the server keeps its data), and campaigning is acquiring, with the lock's scripts, waiting,
 * release notices, extension and loss detection (election grants are in the backend's active set, so
 * they turn uncertain with the connection and are rechecked when it is back).
 */
export class RedisElections {
  readonly #keyPrefix: string;
  readonly #locks: LockProtocolAt;

  constructor(keyPrefix: string, locks: LockProtocolAt) {
    this.#keyPrefix = keyPrefix;
    this.#locks = locks;
  }

  /** Campaigns for `request.key` (see `LockBackend.campaign`): the grant is leadership, its token the term. */
  campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    const keys = redisElectionKeys(this.#keyPrefix, request.key);
    // Core's request is a class instance: its methods are forwarded, not spread.
    return this.#locks.acquire(
      {
        key: request.key,
        mode: 'exclusive',
        ownerId: request.ownerId,
        ttlMs: request.ttlMs,
        deadline: request.deadline,
        signal: request.signal,
        metadata: request.value,
        observer: request.observer,
        contended: () => request.contended(),
        releaseLater: (release, until) => request.releaseLater(release, until),
      },
      keys,
    );
  }

  /** The leader of `name` (its value and term), or `undefined` when nobody leads. One bounded read. */
  async leader(name: string): Promise<LeaderInfo | undefined> {
    const holder = (await this.#locks.inspect(name, redisElectionKeys(this.#keyPrefix, name)))?.holders[0];
    if (holder === undefined) return undefined;
    // A holder without our metadata (a value an operator SET at the key) leads with an empty value
    // and no term: nothing that campaigned through fencelock can lead while it holds the key.
    return { name, value: holder.metadata ?? '', term: holder.fencingToken };
  }
}
