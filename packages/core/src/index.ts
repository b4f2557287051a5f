/**
 * `@fencelock/core`: the API users program against. Adapter authors import the SPI and the
 * lifecycle building blocks from `@fencelock/core/adapter`.
 */
export {
  LockError,
  LockErrorCode,
  LockRangeError,
  LockTypeError,
  isLockError,
} from './errors.js';
export type { LockErrorDetails, LockLossReason, NodeOutcome } from './errors.js';
export type { DeletionNotice, ElectionSupport, ExpiryModel, FencingLevel, LockCapabilities, SemaphoreSupport } from './capabilities.js';
export type * from './types.js';
export type { LockEventBase, LockEventListener, LockEventMap } from './events.js';
export { monotonicNow } from './clock.js';
export {
  DEFAULT_OBSERVE_POLL_MS,
  MAX_DURATION_MS,
  MAX_ELECTION_VALUE_BYTES,
  MAX_KEY_BYTES,
  MAX_METADATA_BYTES,
  MAX_OBSERVE_POLL_MS,
  MAX_SEMAPHORE_LIMIT,
  MIN_OBSERVE_POLL_MS,
} from './validation.js';
export type { LockProviderOptions } from './lock-provider.js';
export type { RetryOptions } from './lifecycle/backoff.js';
export { DEFAULT_CLOCK_DRIFT_FACTOR } from './lifecycle/drift.js';
export { RequestTimeoutError } from './lifecycle/timeout.js';
export { withLock } from './with-lock.js';
export { acquireAll, MAX_KEYS_PER_SET } from './acquire-all.js';
export type { LockSet } from './acquire-all.js';
export { FencingGuard } from './fencing-guard.js';
export type { FenceRejection, FencingGuardStats } from './fencing-guard.js';
export { MemoryLockProvider } from './memory/memory-lock-provider.js';
export type { MemoryLockProviderOptions } from './memory/memory-lock-provider.js';
export { MemoryLockStore } from './memory/memory-lock-store.js';
export type { MemorySemaphores } from './memory/memory-semaphores.js';
export { MemoryElections } from './memory/memory-elections.js';
