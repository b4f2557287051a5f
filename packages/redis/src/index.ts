export { RedisLockProvider, createRedisLockProvider } from './redis-lock-provider.js';
export type { RedisLockProviderOptions } from './redis-lock-options.js';
export type { HandoffPolicy } from '@fencelock/redis-shared';
export type {
  KnownRedisClusterOptions,
  KnownRedisConnectionOptions,
  RedisClusterNode,
  RedisClusterOptions,
  RedisConnectionOptions,
} from '@fencelock/redis-shared';
export {
  DEFAULT_CHANNEL,
  DEFAULT_CLOCK_DRIFT_FACTOR,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_FENCE_COUNTER_TTL_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './redis-lock-options.js';
export { REDIS_CAPABILITIES, REDIS_MIN_TTL_MS } from './redis-capabilities.js';
/** Full lock keys of this form are reserved for fencelock's side keys and refused (`LOCK_INVALID_ARGUMENT`). */
export { RESERVED_KEY_PATTERN } from '@fencelock/redis-shared';
/** The clients `options.client` accepts (structural types: no client package needs to be installed for them). */
export type { GlideFamilyClient, IoredisFamilyClient, NodeRedisFamilyClient, NodeRedisFamilyCluster, SupportedRedisClient } from '@fencelock/redis-shared';
