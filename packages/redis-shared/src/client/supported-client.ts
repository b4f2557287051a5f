/**
 * The Redis clients the adapters accept, as the members they use (structural types: no type is
 * imported from a client package, so that each one stays an optional peer dependency and a client
 * from any copy or version of its package fits). Anything else — another library's client, a plain
 * object — is a type error here and a `LOCK_INVALID_ARGUMENT` error at run time.
 */

// Methods are declared with `(...args: never[]) => unknown`: any function fits (the adapters call
// them through the seam, which knows each family's signatures); the type only asks that they exist.
type AnyMethod = (...args: never[]) => unknown;

/**
 * An ioredis `Redis` or `Cluster` (ioredis 5 or 6), or an iovalkey one (the ioredis fork, same API).
 * Both protocols: ioredis 6 speaks RESP3 by default, RESP2 with `protocol: 2`.
 */
export interface IoredisFamilyClient {
  /** ioredis' connection state (`wait`, `connecting`, `connect`, `ready`, `reconnecting`, `close`, `end`). */
  readonly status: string;
  readonly isCluster: boolean;
  eval: AnyMethod;
  evalsha: AnyMethod;
  sendCommand: AnyMethod;
  duplicate: AnyMethod;
  call: AnyMethod;
  on: AnyMethod;
  off: AnyMethod;
  quit: AnyMethod;
  disconnect: AnyMethod;
}

/** A node-redis client (`createClient()` of `redis` / `@redis/client` 5 or 6), RESP2 or RESP3. */
export interface NodeRedisFamilyClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  /** A standalone client's own (a cluster client has none): tells the two apart. */
  readonly isWatching: boolean;
  sendCommand: AnyMethod;
  duplicate: AnyMethod;
  connect: AnyMethod;
  subscribe: AnyMethod;
  pSubscribe: AnyMethod;
  on: AnyMethod;
  off: AnyMethod;
  close: AnyMethod;
  destroy: AnyMethod;
}

/** A node-redis cluster client (`createCluster()` of `redis` / `@redis/client` 5 or 6). */
export interface NodeRedisFamilyCluster {
  readonly isOpen: boolean;
  readonly masters: readonly object[];
  sendCommand: AnyMethod;
  nodeClient: AnyMethod;
  duplicate: AnyMethod;
  connect: AnyMethod;
  subscribe: AnyMethod;
  pSubscribe: AnyMethod;
  on: AnyMethod;
  off: AnyMethod;
  close: AnyMethod;
  destroy: AnyMethod;
}

/**
 * A Valkey GLIDE 2.x client (`GlideClient` or `GlideClusterClient` of `@valkey/valkey-glide`, made
 * with `createClient`), RESP3 (its default) or RESP2.
 */
export interface GlideFamilyClient {
  customCommand: AnyMethod;
  invokeScript: AnyMethod;
  close: AnyMethod;
}

/** A Valkey GLIDE 2.x standalone `GlideClient` (a `GlideClusterClient` has `invokeScriptWithRoute`): a Redlock master. */
export interface GlideStandaloneClient extends GlideFamilyClient {
  readonly invokeScriptWithRoute?: never;
}

/**
 * Every Redis client `@fencelock/redis` accepts as `options.client` (Redlock: one standalone client
 * per master): ioredis 5 and 6, iovalkey, node-redis 5 and 6, Valkey GLIDE 2, standalone or cluster.
 */
export type SupportedRedisClient = IoredisFamilyClient | NodeRedisFamilyClient | NodeRedisFamilyCluster | GlideFamilyClient;

/** What a value is, in a few words, for an error message naming what was passed. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value !== 'object') return typeof value === 'function' ? 'a function' : `a ${typeof value}`;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? `a ${name} instance` : 'a plain object';
}
