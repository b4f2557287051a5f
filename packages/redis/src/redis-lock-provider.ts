import { BaseLockProvider, validateDurationMs, validateWaitMs } from '@fencelock/core/adapter';
import type { SupportedRedisClient } from '@fencelock/redis-shared';
import { REDIS_CAPABILITIES } from './redis-capabilities.js';
import { openRedisConnection } from './redis-connection.js';
import { RedisLockBackend } from './redis-lock-backend.js';
import { resolveRedisLockOptions, type RedisLockProviderOptions } from './redis-lock-options.js';

/**
 * Locks on a single Redis or a Redis Cluster, through the client you have (ioredis 5 or 6, iovalkey,
 * node-redis 5 or 6, Valkey GLIDE 2) or one it opens with ioredis: `SET key owner NX PX ttl`
 * plus a per-key fencing token in one Lua script, owner-checked release and extend, release
 * notifications on one shared pub/sub connection, and a loss signal from the validity deadline.
 * Build it with {@link createRedisLockProvider}.
 */
export class RedisLockProvider<C extends SupportedRedisClient = SupportedRedisClient> extends BaseLockProvider {
  /**
   * The client the provider uses: the one given (typed as given: a `GlideClient` stays one), or the
   * ioredis client it opened and will close (typed as the union of the supported clients,
   * `SupportedRedisClient`).
   */
  readonly client: C;

  constructor(options: RedisLockProviderOptions<C>) {
    const resolved = resolveRedisLockOptions(options);
    // Check what the base class checks before a connection is opened, so bad options leak nothing.
    if (options.defaultTtlMs !== undefined) validateDurationMs(options.defaultTtlMs, 'defaultTtlMs', REDIS_CAPABILITIES.minTtlMs);
    if (options.defaultWaitMs !== undefined) validateWaitMs(options.defaultWaitMs, 'defaultWaitMs');
    const connection = openRedisConnection(options, resolved);
    super(new RedisLockBackend(connection, resolved), options);
    this.client = connection.client as C;
  }
}

/**
 * Creates a Redis lock provider.
 *
 * ```ts
 * const locks = createRedisLockProvider({ connection: 'redis://127.0.0.1:6379' }); // or { client } of any supported client
 * await using lock = await locks.acquire('orders:42', { ttlMs: 10_000 });
 * await db.write(row, { fence: lock.fencingToken });
 * ```
 *
 * @throws `LOCK_INVALID_ARGUMENT` (`LockTypeError` / `LockRangeError`) for bad options, before connecting.
 */
export function createRedisLockProvider<C extends SupportedRedisClient = SupportedRedisClient>(options: RedisLockProviderOptions<C>): RedisLockProvider<C> {
  return new RedisLockProvider<C>(options);
}
