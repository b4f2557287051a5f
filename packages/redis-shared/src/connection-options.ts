/**
 * The options of the connections the adapters open themselves — with ioredis, their default client —
 * typed here rather than imported from ioredis: the published declarations must compile in a project
 * that installed another client (node-redis, Valkey GLIDE) and no ioredis, with `skipLibCheck: false`.
 *
 * The options are handed to ioredis as they are. The fields listed are type-checked (with the types
 * ioredis 5 and 6 and iovalkey give them, so that their own `RedisOptions` / `ClusterOptions` values
 * fit); any other ioredis option passes through unchecked (a type of our own cannot know every option
 * of every ioredis version). ioredis' `keyPrefix` is refused at run time (`LOCK_INVALID_ARGUMENT`):
 * the providers have their own `keyPrefix`.
 */

/**
 * The connection settings the providers read or set themselves, and the ones most set by users,
 * as ioredis names and types them.
 */
export interface KnownRedisConnectionOptions {
  /** Server host name or IP address. @default '127.0.0.1' (ioredis') */
  readonly host?: string | undefined;
  /** Server port. @default 6379 (ioredis') */
  readonly port?: number | undefined;
  /** A Unix socket path, instead of host and port. */
  readonly path?: string | undefined;
  /** IP family of `host` (4 or 6). */
  readonly family?: number | undefined;
  /** ACL user name (Redis 6+). */
  readonly username?: string | undefined;
  /** Password (`AUTH`). */
  readonly password?: string | undefined;
  /** Database index (`SELECT`). Redis Cluster has only database 0. */
  readonly db?: number | undefined;
  /** TLS: the options of Node's `tls.connect` (`ca`, `cert`, `key`, `servername`, …); absent for plain TCP. */
  readonly tls?: object | undefined;
  /** `CLIENT SETNAME` of the connection. */
  readonly connectionName?: string | undefined;
  /** RESP version (ioredis 6; ioredis 5 and iovalkey speak RESP2). */
  readonly protocol?: 2 | 3 | undefined;
  /** How long a connection attempt may take, in ms. */
  readonly connectTimeout?: number | undefined;
  /** ioredis' per-command timeout, in ms. @default the provider's `requestTimeoutMs` (`@fencelock/redis`) */
  readonly commandTimeout?: number | undefined;
  /** Reconnect attempts a queued command waits through before it fails. */
  readonly maxRetriesPerRequest?: number | null | undefined;
  /** Delay before reconnect attempt `times` (1, 2, …), in ms; nothing to stop reconnecting. */
  readonly retryStrategy?: ((times: number) => number | void | null) | null | undefined;
  /** Whether commands whose reply was lost with a connection are sent again after reconnecting. @default false (the providers') */
  readonly autoResendUnfulfilledCommands?: boolean | undefined;
  /** Whether ioredis sends `INFO` to wait for a loading server before `ready` (an ACL user may need it off). */
  readonly enableReadyCheck?: boolean | undefined;
  /** Whether commands issued while disconnected wait for the connection. */
  readonly enableOfflineQueue?: boolean | undefined;
  /** ioredis' automatic pipelining of commands issued in the same tick. */
  readonly enableAutoPipelining?: boolean | undefined;
  /** TCP keep-alive initial delay, in ms. */
  readonly keepAlive?: number | undefined;
  /** `setNoDelay` on the socket. */
  readonly noDelay?: boolean | undefined;
}

/**
 * The options of a connection the adapters open with ioredis: {@link KnownRedisConnectionOptions},
 * type-checked, plus any other ioredis option, passed through as it is.
 *
 * A union of two forms, each for one kind of value: an object written in place may carry options
 * not listed (the form with an index signature), and a value typed as an interface — ioredis'
 * own `RedisOptions`, which has no index signature — fits the form without one.
 */
export type RedisConnectionOptions = KnownRedisConnectionOptions | (KnownRedisConnectionOptions & { readonly [option: string]: unknown });

/** A Redis Cluster startup node: `'host:port'`, a port, or an address (ioredis' `ClusterNode`). */
export type RedisClusterNode = string | number | { readonly host?: string | undefined; readonly port?: number | undefined };

/** The ioredis `Cluster` settings listed and type-checked in {@link RedisClusterOptions}. */
export interface KnownRedisClusterOptions {
  /** Options of each node's connection (host, port and path come from the nodes). */
  readonly redisOptions?: RedisConnectionOptions | undefined;
  /** Delay before cluster reconnect attempt `times`, in ms; nothing to stop. */
  readonly clusterRetryStrategy?: ((times: number, reason?: Error) => number | void | null) | null | undefined;
  /** Host/port translation of the addresses the cluster announces (ioredis' `natMap`). */
  readonly natMap?: object | undefined;
  /** How many MOVED/ASK redirections a command follows. */
  readonly maxRedirections?: number | undefined;
  /** How long a slots refresh may take, in ms. */
  readonly slotsRefreshTimeout?: number | undefined;
  /** ioredis' automatic pipelining of commands issued in the same tick. */
  readonly enableAutoPipelining?: boolean | undefined;
}

/**
 * The options of a Redis Cluster connection the adapters open with ioredis:
 * {@link KnownRedisClusterOptions}, type-checked, plus any other ioredis `ClusterOptions` option,
 * passed through (see {@link RedisConnectionOptions} for why a union).
 */
export type RedisClusterOptions = KnownRedisClusterOptions | (KnownRedisClusterOptions & { readonly [option: string]: unknown });
