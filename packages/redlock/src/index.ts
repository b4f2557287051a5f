export { RedlockLockProvider, createRedlockLockProvider } from './redlock-lock-provider.js';
export type { RedlockLockProviderOptions, RedlockMaster, RedlockMasterOptions } from './options.js';
export type { HandoffPolicy } from '@fencelock/redis-shared';
export type { KnownRedisConnectionOptions, RedisConnectionOptions } from '@fencelock/redis-shared';
export { REDLOCK_CAPABILITIES } from './redlock-backend.js';
export { NodeNotConnectedError, NodeTimeoutError } from './master-node.js';
/** What `LockError.nodes[i].error` is for a master that did not answer within `requestTimeoutMs` (core's class). */
export { RequestTimeoutError } from '@fencelock/core/adapter';
