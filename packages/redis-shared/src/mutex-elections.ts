import type { BackendAcquireRequest, BackendCampaignRequest, BackendGrant, LeaderInfo, LockInfo } from '@fencelock/core/adapter';

/** An adapter's lock protocol, run at keys the caller chooses (an election's instead of a lock's). */
export interface MutexAt<Keys> {
  /** Acquires as `LockBackend.acquire` does, at `keys` (same waiting, cleanup and active set). */
  acquire(request: BackendAcquireRequest, keys: Keys): Promise<BackendGrant | undefined>;
  /** Reads the holder at `keys` as `LockBackend.inspect` does, reported under `key`. */
  inspect(key: string, keys: Keys): Promise<LockInfo | undefined>;
}

/**
 * Leader election over an adapter's own mutex (`@fencelock/redis`, `@fencelock/redlock`): an
 * election of a name is the exclusive lock at the election's keys (`keysOf(name)`, a namespace apart
 * from the locks and semaphores of that name). Nothing here is a protocol of its own: the leader is
 * the lock's holder, the value its metadata, the term its fencing token (`undefined` where the
 * adapter has none), and campaigning is acquiring, with the lock's scripts, waiting, release
 * notices, extension and loss detection (an election's grant is one of the backend's active locks,
 * so it turns uncertain with the connection and is rechecked when it is back).
 */
export class MutexElections<Keys> {
  readonly #keysOf: (name: string) => Keys;
  readonly #mutex: MutexAt<Keys>;

  /** `keysOf` throws `LOCK_INVALID_ARGUMENT` for a reserved name, before any request is sent. */
  constructor(keysOf: (name: string) => Keys, mutex: MutexAt<Keys>) {
    this.#keysOf = keysOf;
    this.#mutex = mutex;
  }

  /** Campaigns for `request.key` (see `LockBackend.campaign`): the grant is leadership, its token the term. */
  async campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    const keys = this.#keysOf(request.key);
    // Core's request is a class instance: its methods are forwarded, not spread.
    return this.#mutex.acquire(
      {
        key: request.key,
        mode: 'exclusive',
        ownerId: request.ownerId,
        ttlMs: request.ttlMs,
        deadline: request.deadline,
        // Read when the mutex needs it: a campaign that never waits makes no AbortSignal.
        get signal() {
          return request.signal;
        },
        waitSignal: request.waitSignal,
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
    const holder = (await this.#mutex.inspect(name, this.#keysOf(name)))?.holders[0];
    if (holder === undefined) return undefined;
    // A holder without our metadata (a value an operator SET at the key) leads with an empty value
    // and no term: nothing that campaigned through fencelock can lead while it holds the key.
    return { name, value: holder.metadata ?? '', term: holder.fencingToken };
  }
}
