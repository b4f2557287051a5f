/**
 * What `@fencelock/redis` and `@fencelock/redlock` share: the seam to the Redis client a user has
 * (`LockClient`, one implementation per client family: ioredis, node-redis, Valkey GLIDE), the Lua scripts of the Redis lock protocol, the batcher of owner-checked extensions, the local
 * line of waiters woken by release announcements, and the key helpers both adapters need. An
 * internal building block of those two packages, released in step with them: no stable API.
 *
 * @packageDocumentation
 */
export { RESERVED_KEY_PATTERN } from './reserved-keys.js';
// Moved to core (every adapter derives names per key); still exported here for adapters that import it from us.
export { KeyCache } from '@fencelock/core/adapter';
export type {
  KnownRedisClusterOptions,
  KnownRedisConnectionOptions,
  RedisClusterNode,
  RedisClusterOptions,
  RedisConnectionOptions,
} from './connection-options.js';
export { MutexElections, type MutexAt } from './mutex-elections.js';
export { HASH_SLOTS, hashSlot, hashTagForSlot } from './key-slot.js';
export { ExtendBatcher, MAX_EXTEND_BATCH, extendReplyFlags, type ExtendItem, type ExtendOutcome, type ExtendManyCall } from './extend-batcher.js';
export { LocalWaiters, type DirectGrant, type GrantWakeup, type ReleaseSubscription } from './local-waiters.js';
export { lengthPrefixed, splitDirectGrant, splitLengthPrefixed, type DirectGrantAnnouncement } from './announcement.js';
export { EFFECTS_REPLICATION_LUA, switchesReplicationBeforeWrites } from './scripts/effects-replication-lua.js';
export { headOfLineLua } from './scripts/head-of-line-lua.js';
export { nextTokenLua } from './scripts/next-token-lua.js';
export { grantToHeadLua } from './scripts/grant-to-head-lua.js';
export { DEFAULT_HANDOFF, HANDOFF_RESERVATION_MS, resolveHandoff, type HandoffPolicy } from './handoff.js';
export { directGrantTtlMs } from './direct-grant.js';
export type { RedisLockScript } from './scripts/redis-lock-script.js';
export {
  defineRedisLockCommands,
  extendManyCommand,
  extendManyScript,
  inspectScript,
  redisLockScripts,
  registerRedisLockScripts,
  scriptCall,
  variadicCommandName,
  type RedisLockCommands,
  type ScriptCall,
  type ScriptDefiningClient,
} from './scripts/define-commands.js';
export { ScriptRunner, isNoScriptError, scriptSha, type ScriptArgument, type ScriptTransport } from './scripts/script-runner.js';
export type {
  ClientEndpoint,
  ClientFamily,
  ClientStatus,
  LockClient,
  ServerLink,
  SubscriberConnection,
  SubscriberHandlers,
  Subscriptions,
} from './client/lock-client.js';
export {
  describeValue,
  type GlideFamilyClient,
  type GlideStandaloneClient,
  type IoredisFamilyClient,
  type NodeRedisFamilyClient,
  type NodeRedisFamilyCluster,
  type SupportedRedisClient,
} from './client/supported-client.js';
export { IoredisLockClient, timeReplyMicros, type IoredisInternals, type IoredisLockClientOptions } from './client/ioredis-lock-client.js';
export { RespRequestEncoder } from './client/resp-request-encoder.js';
export { REDIS_WRITE_BATCH_LIMIT } from './client/ioredis-timed-commands.js';
export type { IoredisCommand, IoredisCommandClass } from './client/ioredis-wire-command.js';
export {
  NodeRedisClusterLockClient,
  NodeRedisLockClient,
  type NodeRedisClientInternals,
  type NodeRedisClusterInternals,
} from './client/node-redis-lock-client.js';
export { GlideLockClient, type GlideConfiguration, type GlideInternals } from './client/glide-lock-client.js';
export { GlideStatus, isGlideConnectionError, type GlideCommandOptions, type GlideRoute } from './client/glide-status.js';
export { SUPPORTED_CLIENTS, assertSupportedClient, isSupportedClient, lockClientOf } from './client/lock-client-of.js';
export { loadIoredis, type IoredisModule } from './client/load-ioredis.js';
export { listenToOwnedConnection } from './client/ioredis-owned-errors.js';
export { EVICTION_POLICY_WARNING, evictionPolicyWarning, mergeEvictionWarnings, type ServerCommand } from './eviction-check.js';
export { LINE_TAG_LENGTH, lineMember, newLineTag, withoutLineTag } from './line-tag.js';
export { redisRefusal, refusalCause } from './refusals.js';
export { redisKeyConflict } from './key-conflict.js';
