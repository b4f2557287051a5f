import {
  DEFAULT_CLOCK_DRIFT_FACTOR,
  DEFAULT_RETRY,
  LockRangeError,
  LockTypeError,
  MAX_DURATION_MS,
  readAdapterOptions,
  validateDurationMs,
  validateRequestTimeoutMs,
  type LockProviderOptions,
  type RetryOptions,
} from '@fencelock/core/adapter';
import {
  RESERVED_KEY_PATTERN,
  assertSupportedClient,
  resolveHandoff,
  type HandoffPolicy,
  type RedisClusterNode,
  type RedisClusterOptions,
  type RedisConnectionOptions,
  type SupportedRedisClient,
} from '@fencelock/redis-shared';

/**
 * Options of {@link createRedisLockProvider}. Give exactly one of `client`, `connection`, `clusterNodes`.
 * `C` is the type of the client given (inferred), which the provider's `client` then has.
 */
export interface RedisLockProviderOptions<C extends SupportedRedisClient = SupportedRedisClient> extends LockProviderOptions {
  /**
   * The Redis client to use, standalone or cluster: an ioredis 5 or 6 `Redis` / `Cluster`, an
   * iovalkey one, a node-redis 5 or 6 client (`createClient()` / `createCluster()` of `redis` or
   * `@redis/client`, connected or not: the provider connects one nobody connected), or a Valkey
   * GLIDE 2 `GlideClient` / `GlideClusterClient` (see the README on how its connection state is
   * read), RESP2 or RESP3.
   * The provider never closes it. An ioredis client must not have ioredis' own `keyPrefix` option
   * (use this provider's {@link keyPrefix} instead: the side keys must be placed by hash slot, which
   * a client-side prefix would change). Anything else is refused (`LOCK_INVALID_ARGUMENT`).
   */
  readonly client?: C;
  /**
   * A `redis://` URL or ioredis options: the provider opens this connection with ioredis (which must
   * then be installed) and closes it in `close()`. The options are handed to ioredis as they are:
   * `host`, `port`, `username`, `password`, `db`, `tls` and the others of
   * {@link KnownRedisConnectionOptions} are type-checked, any other ioredis option passes through;
   * a value of ioredis' own `RedisOptions` type fits.
   */
  readonly connection?: string | RedisConnectionOptions;
  /** Redis Cluster startup nodes: the provider opens an ioredis `Cluster` (ioredis must be installed) and closes it in `close()`. */
  readonly clusterNodes?: readonly RedisClusterNode[];
  /**
   * Extra ioredis `Cluster` options for {@link clusterNodes}, handed to ioredis as they are (see
   * {@link RedisClusterOptions}); a value of ioredis' own `ClusterOptions` type fits.
   */
  readonly clusterOptions?: RedisClusterOptions;
  /**
   * Prepended to every user key to form the Redis key of the lock. The default `''` puts the lock
   * at exactly the user's key, so node-redlock, redis-py's `Lock` or a hand-written SET-NX lock on
   * the same name excludes and is excluded by it. @default ''
   */
  readonly keyPrefix?: string;
  /** The pub/sub channel on which releases are published and waiters listen. @default 'fencelock:released' */
  readonly channel?: string;
  /**
   * How long one request (acquire, extend, release, inspect) may take before it counts as failed,
   * in ms, enforced by the provider on any client (and set as ioredis' `commandTimeout` on clients it
   * opens). What a timed-out acquire may have taken is released by core in the background, in case
   * the server applies it later. At most a third of `defaultTtlMs` (a larger value is refused), so
   * that an extension hanging on a paused server still leaves time for the next one.
   * (Formerly `commandTimeoutMs`, now refused with a message naming this option.)
   * @default the smaller of 2_000 and a third of `defaultTtlMs`
   */
  readonly requestTimeoutMs?: number;
  /**
   * Share of the TTL subtracted from a lock's validity, for the server's clock running faster than
   * ours (plus a fixed 2 ms): `validUntil = sendTime + ttl − ceil(ttl × factor) − 2`. @default 0.01
   */
  readonly clockDriftFactor?: number;
  /** Backoff between polls while waiting (notifications wake waiters sooner). @default core's DEFAULT_RETRY */
  readonly retry?: Partial<RetryOptions>;
  /**
   * How long a key's fence counter (`{<tag>}fencelock:fence:<lock key>`) outlives the key's last
   * acquisition, in ms; `Infinity` keeps every counter forever. An expired counter is replaced by
   * the server-time floor every token already carries, so tokens still increase as long as the
   * Redis server's clock never steps back by more than this lifetime (see the README). At least
   * 1 s. @default 7 days (604_800_000)
   */
  readonly fenceCounterTtlMs?: number;
  /**
   * Who gets a released lock while clients wait for it: `'waiters-first'` reserves it for a moment
   * for the clients already waiting (a client that was not in line is turned away once), so nobody
   * is starved; `'barging'` lets this provider's waiting attempts take a free key at once, as
   * node-redlock and redis-semaphore do, and a client may wait until its `waitMs` runs out. On
   * Redis, where a release grants the lock to the head of the line itself, barging buys little or
   * no throughput. See the README's "Hand-off" section for the figures.
   * @default 'waiters-first'
   */
  readonly handoff?: HandoffPolicy;
}

/** The options after validation. */
export interface ResolvedRedisLockOptions {
  readonly keyPrefix: string;
  readonly channel: string;
  readonly requestTimeoutMs: number;
  readonly clockDriftFactor: number;
  readonly retry: RetryOptions;
  /** 0 when counters never expire. */
  readonly fenceCounterTtlMs: number;
  readonly handoff: HandoffPolicy;
}

/** Default of {@link RedisLockProviderOptions.fenceCounterTtlMs}: 7 days. */
export const DEFAULT_FENCE_COUNTER_TTL_MS = 7 * 24 * 60 * 60 * 1000;
// Shorter lifetimes make the clock assumption (no step back by more than the lifetime) too tight.
const MIN_FENCE_COUNTER_TTL_MS = 1_000;

/** Default of {@link RedisLockProviderOptions.channel}. */
export const DEFAULT_CHANNEL = 'fencelock:released';
/**
 * The longest default of {@link RedisLockProviderOptions.requestTimeoutMs}, in ms: the default is
 * the smaller of this and a third of `defaultTtlMs`.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 2_000;
/**
 * @deprecated Renamed {@link DEFAULT_REQUEST_TIMEOUT_MS}, with the option (`requestTimeoutMs`).
 * Kept for one release so that code reading it keeps compiling.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = DEFAULT_REQUEST_TIMEOUT_MS;
/** Default of {@link RedisLockProviderOptions.clockDriftFactor}: core's one drift rule (1 % of the TTL, plus 2 ms). */
export { DEFAULT_CLOCK_DRIFT_FACTOR };

// core's default TTL (LockProviderOptions.defaultTtlMs), which the default request timeout must fit.
const CORE_DEFAULT_TTL_MS = 30_000;

const KNOWN_OPTIONS: readonly (keyof RedisLockProviderOptions & string)[] = [
  'client',
  'connection',
  'clusterNodes',
  'clusterOptions',
  'keyPrefix',
  'channel',
  'requestTimeoutMs',
  'clockDriftFactor',
  'retry',
  'fenceCounterTtlMs',
  'handoff',
  'defaultTtlMs',
  'defaultWaitMs',
];
// Options that were renamed: refused like any unknown option, with the name to use instead.
const RENAMED_OPTIONS: ReadonlyMap<string, string> = new Map([['commandTimeoutMs', 'requestTimeoutMs']]);

/** Checks the options (before any connection is made) and fills in defaults. */
export function resolveRedisLockOptions(options: RedisLockProviderOptions): ResolvedRedisLockOptions {
  if (typeof options !== 'object' || options === null) {
    throw new LockTypeError('options', 'options must be an object with one of client, connection, clusterNodes');
  }
  for (const [old, renamed] of RENAMED_OPTIONS) {
    if (Object.hasOwn(options, old)) {
      throw new LockTypeError(`options.${old}`, `unknown option "${old}": it was renamed ${renamed}`);
    }
  }
  readAdapterOptions(options, KNOWN_OPTIONS);
  const sources = (['client', 'connection', 'clusterNodes'] as const).filter((name) => options[name] !== undefined);
  if (sources.length !== 1) {
    throw new LockTypeError(
      'options',
      `give exactly one of options.client, options.connection, options.clusterNodes (got ${sources.length === 0 ? 'none' : sources.join(', ')})`,
    );
  }
  if (options.client !== undefined) checkClient(options.client);
  if (options.connection !== undefined) {
    const connection = options.connection;
    if (typeof connection !== 'string' && (typeof connection !== 'object' || connection === null)) {
      throw new LockTypeError('options.connection', 'options.connection must be a redis:// URL or ioredis options');
    }
    if (typeof connection === 'object' && keyPrefixOf(connection)) {
      throw new LockTypeError('options.connection.keyPrefix', "use the provider's options.keyPrefix, not ioredis' keyPrefix");
    }
  }
  if (options.clusterNodes !== undefined) {
    if (!Array.isArray(options.clusterNodes) || options.clusterNodes.length === 0) {
      throw new LockTypeError('options.clusterNodes', 'options.clusterNodes must be a non-empty array of startup nodes');
    }
    const clusterOptions = options.clusterOptions;
    if (clusterOptions !== undefined && (keyPrefixOf(clusterOptions) || keyPrefixOf(clusterOptions.redisOptions))) {
      throw new LockTypeError('options.clusterOptions.keyPrefix', "use the provider's options.keyPrefix, not ioredis' keyPrefix");
    }
  } else if (options.clusterOptions !== undefined) {
    throw new LockTypeError('options.clusterOptions', 'options.clusterOptions needs options.clusterNodes');
  }

  const keyPrefix = options.keyPrefix ?? '';
  if (typeof keyPrefix !== 'string' || !keyPrefix.isWellFormed()) {
    throw new LockTypeError('options.keyPrefix', 'options.keyPrefix must be a well-formed string');
  }
  if (RESERVED_KEY_PATTERN.test(keyPrefix)) {
    throw new LockRangeError('options.keyPrefix', 'options.keyPrefix must not start like a fencelock side key ({<tag>}fencelock:)');
  }
  const channel = options.channel ?? DEFAULT_CHANNEL;
  if (typeof channel !== 'string' || channel.length === 0) {
    throw new LockTypeError('options.channel', 'options.channel must be a non-empty string');
  }
  // The TTL the request timeout must fit; checked fully (minimum TTL included) by the provider.
  const defaultTtlMs = options.defaultTtlMs === undefined ? CORE_DEFAULT_TTL_MS : validateDurationMs(options.defaultTtlMs, 'defaultTtlMs');
  const requestTimeoutMs =
    options.requestTimeoutMs === undefined
      ? Math.max(1, Math.min(DEFAULT_REQUEST_TIMEOUT_MS, Math.floor(defaultTtlMs / 3)))
      : validateRequestTimeoutMs(options.requestTimeoutMs, defaultTtlMs, 'defaultTtlMs');
  const clockDriftFactor = options.clockDriftFactor ?? DEFAULT_CLOCK_DRIFT_FACTOR;
  if (typeof clockDriftFactor !== 'number') {
    throw new LockTypeError('options.clockDriftFactor', 'options.clockDriftFactor must be a number');
  }
  if (!(clockDriftFactor >= 0 && clockDriftFactor < 0.5)) {
    throw new LockRangeError('options.clockDriftFactor', 'options.clockDriftFactor must be at least 0 and below 0.5');
  }
  const fenceCounterTtlMs =
    options.fenceCounterTtlMs === Infinity
      ? 0
      : validateDurationMs(options.fenceCounterTtlMs ?? DEFAULT_FENCE_COUNTER_TTL_MS, 'options.fenceCounterTtlMs', MIN_FENCE_COUNTER_TTL_MS);
  const handoff = resolveHandoff(options.handoff);
  return { keyPrefix, channel, requestTimeoutMs, clockDriftFactor, retry: resolveRetry(options.retry), fenceCounterTtlMs, handoff };
}

function resolveRetry(retry: Partial<RetryOptions> | undefined): RetryOptions {
  if (retry === undefined) return DEFAULT_RETRY;
  if (typeof retry !== 'object' || retry === null) throw new LockTypeError('options.retry', 'options.retry must be an object');
  const merged = { ...DEFAULT_RETRY, ...retry };
  for (const name of ['initialDelayMs', 'maxDelayMs', 'factor'] as const) {
    const value = merged[name];
    if (typeof value !== 'number') throw new LockTypeError(`options.retry.${name}`, `options.retry.${name} must be a number`);
    if (!Number.isFinite(value) || value <= 0 || value > MAX_DURATION_MS) {
      throw new LockRangeError(`options.retry.${name}`, `options.retry.${name} must be positive and finite`);
    }
  }
  if (merged.factor < 1) throw new LockRangeError('options.retry.factor', 'options.retry.factor must be at least 1');
  if (merged.maxDelayMs < merged.initialDelayMs) {
    throw new LockRangeError('options.retry.maxDelayMs', 'options.retry.maxDelayMs must be at least initialDelayMs');
  }
  return Object.freeze(merged);
}

// ioredis' own key prefix, which the options pass through untyped (see RedisConnectionOptions).
function keyPrefixOf(options: object | undefined): unknown {
  return (options as { keyPrefix?: unknown } | undefined)?.keyPrefix;
}

// The family is checked by shape (see assertSupportedClient); an ioredis client's own key prefix
// would move the side keys out of their lock key's slot.
function checkClient(client: unknown): void {
  assertSupportedClient(client, 'options.client');
  const options = (client as { options?: { keyPrefix?: string; redisOptions?: { keyPrefix?: string } } }).options;
  if (options?.keyPrefix || options?.redisOptions?.keyPrefix) {
    throw new LockTypeError('options.client', "options.client must not use ioredis' keyPrefix option; use the provider's options.keyPrefix");
  }
}
