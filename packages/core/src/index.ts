export * from './errors.js';
export * from './capabilities.js';
export type * from './types.js';
export type * from './backend.js';
export { LockEventEmitter } from './events.js';
export type { LockEventBase, LockEventListener, LockEventMap } from './events.js';
export { monotonicNow } from './clock.js';
export {
  MAX_DURATION_MS,
  MAX_KEY_BYTES,
  MAX_METADATA_BYTES,
  normalizeAcquireOptions,
  validateDurationMs,
  validateKey,
  validateSignal,
  validateTtlMs,
  validateWaitMs,
} from './validation.js';
export type { NormalizedAcquireOptions } from './validation.js';
export { BaseLockProvider, createLockProvider } from './lock-provider.js';
export type { LockProviderOptions } from './lock-provider.js';
export { DEFAULT_RETRY, backoffDelayMs, sleep, waitForGrant } from './retry.js';
export type { RetryOptions, Wakeup, WaitForGrantOptions } from './retry.js';
export { withLock } from './with-lock.js';
export { acquireAll, MAX_KEYS_PER_SET } from './acquire-all.js';
export type { LockSet } from './acquire-all.js';
export { FencingGuard } from './fencing-guard.js';
export type { FenceRejection, FencingGuardStats } from './fencing-guard.js';
export { MemoryLockProvider } from './memory/memory-lock-provider.js';
export type { MemoryLockProviderOptions } from './memory/memory-lock-provider.js';
export { MemoryLockStore } from './memory/memory-lock-store.js';
export type { StoreGrant, StoreRequest } from './memory/memory-lock-store.js';
