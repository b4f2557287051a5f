import type { BackendAcquireRequest, BackendCampaignRequest, BackendGrant, BackendSemaphoreRequest, LockBackend } from '../backend.js';
import { normalizeCapabilities } from '../capabilities.js';
import { monotonicNow } from '../clock.js';
import { lockLostError } from '../errors.js';
import { BaseLockProvider, type LockProviderOptions } from '../lock-provider.js';
import type { LeaderInfo, LockInfo, SemaphoreInfo } from '../types.js';
import { waitFor } from '../lifecycle/wait.js';
import { MemoryElections } from './memory-elections.js';
import { MemoryLockStore, type StoreGrant } from './memory-lock-store.js';

/** Options of {@link MemoryLockProvider}. */
export interface MemoryLockProviderOptions extends LockProviderOptions {
  /**
   * The store to share with other providers (as several clients share one server). Locks taken
   * through one provider exclude those of every other provider on the same store, and its elections
   * ({@link MemoryElections.of}) are theirs too.
   * @default a new store of this provider's own
   */
  readonly store?: MemoryLockStore;
}

/**
 * In-process locks with real TTLs, FIFO notify-based waiting, shared (read) locks, counting semaphores
 * (several permits at once), leader election (observed by notification), fencing tokens and loss detection. The embedded default: for one process, for demos, and for users' unit tests, where it
 * behaves as the network providers do (and passes the same conformance suite). It does not coordinate
 * separate processes.
 */
export class MemoryLockProvider extends BaseLockProvider {
  /** The store behind this provider. */
  readonly store: MemoryLockStore;

  constructor(options: MemoryLockProviderOptions = {}) {
    const store = options.store ?? new MemoryLockStore();
    super(new MemoryBackend(store), options);
    this.store = store;
  }
}

const MEMORY_CAPABILITIES = normalizeCapabilities({
  // One store-wide counter: tokens increase across every acquisition, and nothing can reset it
  // while any lock it fenced could still exist.
  fencing: 'global',
  lossDetection: true,
  extend: true,
  notify: true,
  fifo: true,
  readWrite: true,
  expiry: 'per-lock',
  ttlResolutionMs: 1,
  minTtlMs: 1,
  // MemoryLockStore.deleteLock tells every holder at once.
  deletionNotice: 'watch',
  semaphore: 'multi-permit',
  // MemoryElections tells its watchers of every change of leader.
  election: 'notified',
});

class MemoryBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities = MEMORY_CAPABILITIES;
  readonly #store: MemoryLockStore;

  constructor(store: MemoryLockStore) {
    this.#store = store;
  }

  acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    return serve(this.#store, request, {
      ownerId: request.ownerId,
      mode: request.mode,
      ttlMs: request.ttlMs,
      metadata: request.metadata,
      observer: request.observer,
    });
  }

  async inspect(key: string): Promise<LockInfo | undefined> {
    return this.#store.inspect(key);
  }

  acquireSemaphore(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    return serve(this.#store.semaphores, request, {
      ownerId: request.ownerId,
      limit: request.limit,
      permits: request.permits,
      ttlMs: request.ttlMs,
      metadata: request.metadata,
      observer: request.observer,
    });
  }

  async inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    return this.#store.semaphores.inspect(key);
  }

  campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    return serve(MemoryElections.of(this.#store), request, {
      ownerId: request.ownerId,
      value: request.value,
      ttlMs: request.ttlMs,
      observer: request.observer,
    });
  }

  async leader(name: string): Promise<LeaderInfo | undefined> {
    return MemoryElections.of(this.#store).leader(name);
  }

  async watchLeader(name: string, onChange: () => void, signal: AbortSignal): Promise<void> {
    MemoryElections.of(this.#store).watch(name, onChange, signal);
  }

  async close(): Promise<void> {
    // Nothing to close: the store outlives its providers.
  }
}

/** What a grant extends and releases through: the store's locks, its semaphores, or its elections. */
interface HolderTable {
  extend(key: string, ownerId: string, ttlMs: number): number | undefined;
  release(key: string, ownerId: string): boolean;
}

/** A holder table that grants: the store's locks, its semaphores, or its elections. */
interface GrantingTable<R> extends HolderTable {
  request(key: string, request: R, wait: boolean): { granted: StoreGrant } | { queued: Promise<StoreGrant>; cancel: () => boolean } | undefined;
}

/** What every backend request of the memory provider shares. */
type ServedRequest = Pick<BackendAcquireRequest, 'key' | 'ownerId' | 'deadline' | 'waitSignal' | 'contended'>;

/**
 * Asks `table` for `request` (as `entry`), waiting in its queue until the deadline or an abort. Not
 * `async` on the way to an immediate answer: a resolved promise is all it needs (an async function's
 * frame costs more than the rest of the grant).
 */
function serve<R>(table: GrantingTable<R>, request: ServedRequest, entry: R): Promise<BackendGrant | undefined> {
  let outcome;
  try {
    outcome = table.request(request.key, entry, request.deadline > monotonicNow());
  } catch (error) {
    return Promise.reject(error);
  }
  if (outcome === undefined) {
    request.contended();
    return Promise.resolve(undefined);
  }
  if ('granted' in outcome) return Promise.resolve(new MemoryGrant(table, request.key, request.ownerId, outcome.granted.token, outcome.granted.expiresAt));
  return waitInTable(table, request, outcome.queued, outcome.cancel);
}

async function waitInTable(table: HolderTable, request: ServedRequest, queued: Promise<StoreGrant>, cancel: () => boolean): Promise<BackendGrant | undefined> {
  request.contended();
  const granted = await waitOrGiveUp(queued, cancel, request);
  if (granted === undefined) return undefined;
  return new MemoryGrant(table, request.key, request.ownerId, granted.token, granted.expiresAt);
}

/** A grant of the store: methods on the prototype, not two closures per lock. */
class MemoryGrant implements BackendGrant {
  readonly #store: HolderTable;
  readonly #key: string;
  readonly #ownerId: string;
  readonly fencingToken: bigint;
  readonly validUntil: number;

  constructor(store: HolderTable, key: string, ownerId: string, fencingToken: bigint, validUntil: number) {
    this.#store = store;
    this.#key = key;
    this.#ownerId = ownerId;
    this.fencingToken = fencingToken;
    this.validUntil = validUntil;
  }

  async extend(ttlMs: number): Promise<number> {
    const validUntil = this.#store.extend(this.#key, this.#ownerId, ttlMs);
    if (validUntil === undefined) throw lockLostError(this.#key, 'taken-over');
    return validUntil;
  }

  release(): Promise<boolean> {
    try {
      return Promise.resolve(this.#store.release(this.#key, this.#ownerId));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/**
 * Waits for a queued grant until the deadline or abort, leaving the queue in either case. A grant that
 * raced the deadline or an abort is kept (core hands back a grant made for an aborted call).
 */
async function waitOrGiveUp<T>(
  queued: Promise<T>,
  cancel: () => boolean,
  request: Pick<BackendAcquireRequest, 'deadline' | 'waitSignal'>,
): Promise<T | undefined> {
  try {
    const outcome = await waitFor<T>({
      deadline: request.deadline,
      signal: request.waitSignal,
      until: (wake) => {
        void queued.then(wake);
        return () => undefined;
      },
    });
    if (outcome.woken) return outcome.value;
  } catch (error) {
    if (cancel()) throw error;
    return queued;
  }
  return cancel() ? undefined : queued;
}
