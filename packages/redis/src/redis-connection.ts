import { backoffDelayMs, monotonicNow, waitFor, withRequestTimeout } from '@fencelock/core/adapter';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisLockProviderOptions, ResolvedRedisLockOptions } from './redis-lock-options.js';

/** The client a provider uses, and whether the provider opened it (and so must close it). */
export interface RedisConnection {
  readonly client: Redis | Cluster;
  readonly owned: boolean;
}

// Reconnect quickly at first, then every ≤ 500 ms with jitter (so clients of a restarted server do
// not come back in lockstep); ioredis keeps trying until the provider closes the client.
const RECONNECT_BACKOFF = Object.freeze({ initialDelayMs: 25, maxDelayMs: 500, factor: 2 });
function reconnectDelayMs(times: number): number {
  return Math.ceil(backoffDelayMs(times, RECONNECT_BACKOFF));
}

// After a hard disconnect, how long to wait for the socket's 'end' before moving on.
const END_AFTER_DISCONNECT_MS = 100;

/**
 * Settings for connections the provider opens:
 * - `commandTimeout` = `requestTimeoutMs`: a paused server must not hang calls forever (the provider
 *   enforces the same bound on clients it is handed).
 * - `maxRetriesPerRequest: 2`: a request waits through at most two reconnect attempts (≤ about 1 s),
 *   then fails, and the lock's own deadline decides what happens next.
 * - `autoResendUnfulfilledCommands: false`: a request whose reply was lost with the connection is not
 *   silently sent again later (an acquire could otherwise take a lock nobody waits for any more).
 */
function redisDefaults(resolved: ResolvedRedisLockOptions): RedisOptions {
  return {
    commandTimeout: resolved.requestTimeoutMs,
    maxRetriesPerRequest: 2,
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelayMs,
  };
}

/** Uses the client given, or opens the one described by the options. */
export function openRedisConnection(options: RedisLockProviderOptions, resolved: ResolvedRedisLockOptions): RedisConnection {
  if (options.client !== undefined) return { client: options.client, owned: false };
  let client: Redis | Cluster;
  if (options.clusterNodes !== undefined) {
    const given: ClusterOptions = options.clusterOptions ?? {};
    client = new Cluster([...options.clusterNodes], {
      clusterRetryStrategy: reconnectDelayMs,
      ...given,
      redisOptions: { ...redisDefaults(resolved), ...given.redisOptions },
    });
  } else if (typeof options.connection === 'string') {
    client = new Redis(options.connection, redisDefaults(resolved));
  } else {
    client = new Redis({ ...redisDefaults(resolved), ...options.connection });
  }
  // Without a listener ioredis prints every connection error; the provider reports them through
  // rejected calls and the handles' `uncertain` state instead.
  client.on('error', () => undefined);
  return { client, owned: true };
}

/** Closes a connection the provider opened: QUIT, or a hard disconnect if the server does not answer in time. */
export async function closeRedisConnection(connection: RedisConnection, timeoutMs: number): Promise<void> {
  if (!connection.owned) return;
  const { client } = connection;
  if (client.status === 'end') return;
  // Resolves once the socket is really closed (QUIT answered and the server hung up, or disconnect()).
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  try {
    await withRequestTimeout(client.quit().then(() => ended), timeoutMs, 'closing the connection');
  } catch {
    // No answer in time (or the QUIT failed): disconnect below.
  } finally {
    if ((client.status as string) !== 'end') {
      client.disconnect();
      await waitFor({
        deadline: monotonicNow() + END_AFTER_DISCONNECT_MS,
        until: (wake) => {
          void ended.then(wake);
          return () => undefined;
        },
      });
    }
  }
}
