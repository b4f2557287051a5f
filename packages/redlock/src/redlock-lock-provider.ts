import { BaseLockProvider } from '@fencelock/core/adapter';
import { IoredisLockClient, RespRequestEncoder, listenToOwnedConnection, loadIoredis, type KnownRedisConnectionOptions, type RedisConnectionOptions } from '@fencelock/redis-shared';
import { MasterNode } from './master-node.js';
import { type RedlockLockProviderOptions, type ResolvedRedlockOptions, resolveRedlockOptions } from './options.js';
import { quorumOf } from './quorum.js';
import { RedlockBackend } from './redlock-backend.js';

/**
 * Defaults for the clients the provider creates. Redlock wants a dead master to fail fast, not to
 * hold requests: every reconnect attempt flushes queued requests with an error
 * (`maxRetriesPerRequest: 0`), and requests in flight when a connection drops are not re-sent to a
 * restarted master later (`autoResendUnfulfilledCommands: false`) — a SET arriving after its round
 * ended would be a grant nobody knows about.
 */
const OWNED_CLIENT_DEFAULTS: KnownRedisConnectionOptions = {
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  enableOfflineQueue: true,
  connectTimeout: 2_000,
  retryStrategy: (attempt: number) => Math.min(attempt * 50, 1_000),
};

function createMasters(options: ResolvedRedlockOptions): MasterNode[] {
  // A round sends one request to every master: the clients the provider opens encode it once.
  const requestEncoder = new RespRequestEncoder();
  return options.masters.map(({ endpoint, source, client }) => {
    if (client !== undefined) return new MasterNode(endpoint, client, false);
    const { Redis, Command } = loadIoredis('options.masters');
    const settings = { ...OWNED_CLIENT_DEFAULTS, ...options.redisOptions };
    const created = typeof source === 'string' ? new Redis(source, settings) : new Redis({ ...settings, ...(source as RedisConnectionOptions) });
    // Connection errors are reported per request (in LockError.nodes).
    listenToOwnedConnection(created);
    return new MasterNode(endpoint, new IoredisLockClient(created, { Command, coalesceWrites: true, requestEncoder }), true);
  });
}

/**
 * Redlock over N independent Redis masters (N odd, ≥ 3), with the algorithm's every step: parallel
 * SET NX PX with a per-master timeout, majority plus drift-adjusted validity, release on every
 * master after a failed round, jittered retry, majority extension. No fencing token: see the README.
 */
export class RedlockLockProvider extends BaseLockProvider {
  /** The masters' endpoints (`host:port`), in the configured order; `LockError.nodes` uses these names. */
  readonly masters: readonly string[];
  /** How many masters make a majority (⌊N/2⌋ + 1). */
  readonly quorum: number;

  constructor(options: RedlockLockProviderOptions) {
    const resolved = resolveRedlockOptions(options);
    const masters = createMasters(resolved);
    super(new RedlockBackend(masters, resolved), options);
    this.masters = Object.freeze(masters.map((m) => m.name));
    this.quorum = quorumOf(masters.length);
  }
}

/**
 * Makes a Redlock provider. Options are checked at once (`LOCK_INVALID_ARGUMENT`); the masters need
 * not be reachable yet.
 *
 * ```ts
 * const locks = createRedlockLockProvider({ masters: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'] });
 * await using lock = await locks.acquire('jobs:42', { ttlMs: 10_000 });
 * ```
 */
export function createRedlockLockProvider(options: RedlockLockProviderOptions): RedlockLockProvider {
  return new RedlockLockProvider(options);
}
