import { BaseLockProvider } from '@fencelock/core/adapter';
import { resolveOptions, type ZooKeeperLockProviderOptions } from './options.js';
import { ZooKeeperBackend } from './zookeeper-backend.js';

const backends = new WeakMap<ZooKeeperLockProvider, ZooKeeperBackend>();

/**
 * fencelock on ZooKeeper: ephemeral-sequential contender nodes (Curator's and kazoo's recipe, and
 * interoperable with both), czxid fencing tokens, waiters woken by a watch on their predecessor only,
 * shared (read) locks, and locks that live and die with the ZooKeeper session; counting semaphores
 * (Curator's `InterProcessSemaphoreV2`) and leader election (Curator's `LeaderLatch`) on the same
 * terms.
 *
 * `defaultTtlMs` is the session timeout the server granted (the requested one until the first
 * connection): a lock whose holder disappears is freed when the server expires its session.
 * Per-acquire `ttlMs` is refused (`LOCK_UNSUPPORTED`).
 */
export class ZooKeeperLockProvider extends BaseLockProvider {
  /**
   * @throws LockTypeError / LockRangeError (code `LOCK_INVALID_ARGUMENT`) for bad options, before any I/O.
   */
  constructor(options: ZooKeeperLockProviderOptions) {
    const resolved = resolveOptions(options);
    const backend = new ZooKeeperBackend(resolved);
    super(backend, {
      defaultTtlMs: resolved.sessionTimeoutMs,
      ...(resolved.defaultWaitMs === undefined ? {} : { defaultWaitMs: resolved.defaultWaitMs }),
    });
    backends.set(this, backend);
  }
}

/**
 * Creates a ZooKeeper lock provider.
 *
 * ```ts
 * const locks = createZooKeeperLockProvider({ connectionString: '127.0.0.1:2181', sessionTimeoutMs: 10_000 });
 * await using lock = await locks.acquire('orders:42');
 * await db.write(order, { fencingToken: lock.fencingToken });
 * ```
 */
export function createZooKeeperLockProvider(options: ZooKeeperLockProviderOptions): ZooKeeperLockProvider {
  return new ZooKeeperLockProvider(options);
}

/**
 * @internal Test hook, not part of the public API: drops the provider's connection without closing its
 * session (no release, no close request, no reconnection), as a crashed process would.
 */
export function dropConnectionForTesting(provider: ZooKeeperLockProvider): void {
  const backend = backends.get(provider);
  if (backend === undefined) throw new Error('not a ZooKeeperLockProvider');
  backend.dropConnectionForTesting();
}
