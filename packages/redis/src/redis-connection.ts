import { backoffDelayMs } from '@fencelock/core/adapter';
import {
  IoredisLockClient,
  listenToOwnedConnection,
  loadIoredis,
  lockClientOf,
  type KnownRedisConnectionOptions,
  type LockClient,
  type RedisClusterOptions,
  type SupportedRedisClient,
} from '@fencelock/redis-shared';
import type { RedisLockProviderOptions, ResolvedRedisLockOptions } from './redis-lock-options.js';

/** The client a provider uses (the user's, or the one it opened), its seam, and whether the provider must close it. */
export interface RedisConnection {
  readonly client: SupportedRedisClient;
  readonly lockClient: LockClient;
  readonly owned: boolean;
}

// Reconnect quickly at first, then every ≤ 500 ms with jitter (so clients of a restarted server do
// not come back in lockstep); ioredis keeps trying until the provider closes the client.
const RECONNECT_BACKOFF = Object.freeze({ initialDelayMs: 25, maxDelayMs: 500, factor: 2 });
function reconnectDelayMs(times: number): number {
  return Math.ceil(backoffDelayMs(times, RECONNECT_BACKOFF));
}

/**
 * Settings for connections the provider opens:
 * - `commandTimeout` = `requestTimeoutMs`: a paused server must not hang calls forever (the provider
 *   enforces the same bound on clients it is handed).
 * - `maxRetriesPerRequest: 2`: a request waits through at most two reconnect attempts (≤ about 1 s),
 *   then fails, and the lock's own deadline decides what happens next.
 * - `autoResendUnfulfilledCommands: false`: a request whose reply was lost with the connection is not
 *   silently sent again later (an acquire could otherwise take a lock nobody waits for any more).
 */
function redisDefaults(resolved: ResolvedRedisLockOptions): KnownRedisConnectionOptions {
  return {
    commandTimeout: resolved.requestTimeoutMs,
    maxRetriesPerRequest: 2,
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelayMs,
  };
}

/**
 * Uses the client given (any supported family, through its seam), or opens the one described by
 * the options with ioredis, the default client.
 */
export function openRedisConnection(options: RedisLockProviderOptions, resolved: ResolvedRedisLockOptions): RedisConnection {
  if (options.client !== undefined) return { client: options.client, lockClient: lockClientOf(options.client, 'options.client'), owned: false };
  const ioredis = loadIoredis(options.clusterNodes === undefined ? 'options.connection' : 'options.clusterNodes');
  let client;
  if (options.clusterNodes !== undefined) {
    const given: RedisClusterOptions = options.clusterOptions ?? {};
    client = new ioredis.Cluster([...options.clusterNodes], {
      clusterRetryStrategy: reconnectDelayMs,
      ...given,
      redisOptions: { ...redisDefaults(resolved), ...given.redisOptions },
    });
  } else if (typeof options.connection === 'string') {
    client = new ioredis.Redis(options.connection, redisDefaults(resolved));
  } else {
    client = new ioredis.Redis({ ...redisDefaults(resolved), ...options.connection });
  }
  listenToOwnedConnection(client);
  // A client we opened comes from the ioredis loaded here: its script commands can be built here,
  // each carrying the request bound.
  const lockClient = new IoredisLockClient(client, { Command: ioredis.Command, requestTimeoutMs: resolved.requestTimeoutMs });
  return { client: client as unknown as SupportedRedisClient, lockClient, owned: true };
}
