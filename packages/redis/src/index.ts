export type { RedisLockScript } from './scripts/redis-lock-script.js';
export { redisLockScripts, defineRedisLockCommands } from './scripts/define-commands.js';
export type { RedisLockCommands } from './scripts/define-commands.js';
export { RedisLockProvider, createRedisLockProvider } from './redis-lock-provider.js';
export type { RedisLockProviderOptions } from './redis-lock-options.js';
export { DEFAULT_CHANNEL, DEFAULT_CLOCK_DRIFT_FACTOR, DEFAULT_COMMAND_TIMEOUT_MS } from './redis-lock-options.js';
export { REDIS_CAPABILITIES, REDIS_MIN_TTL_MS } from './redis-capabilities.js';
export { redisLockKeys, RESERVED_KEY_PATTERN } from './redis-keys.js';
export type { RedisLockKeys } from './redis-keys.js';
export { hashSlot } from './key-slot.js';
/** @internal For adapters on the same scripts (`@fencelock/redlock`): batched owner-checked extension. */
export { ExtendBatcher, type ExtendItem, type ExtendOutcome, type ExtendManyCall } from './extend-batcher.js';
/** @internal See {@link ExtendBatcher}. */
export { extendManyCommand } from './scripts/define-commands.js';
/** @internal For adapters announcing releases over pub/sub (`@fencelock/redlock`): one local waiter woken per release. */
export { LocalWaiters, type ReleaseSubscription } from './local-waiters.js';
