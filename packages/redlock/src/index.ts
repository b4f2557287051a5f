export { RedlockLockProvider, createRedlockLockProvider } from './redlock-lock-provider.js';
export type { RedlockLockProviderOptions, RedlockMaster } from './options.js';
export { REDLOCK_CAPABILITIES } from './redlock-backend.js';
export { NodeNotConnectedError, NodeTimeoutError } from './master-node.js';
