/** The adapter-only exports (see `adapter.ts`). */
export { tlsCertificateProblem } from './tls-refusal.js';
export { asLockError, backendUnavailableError, forbiddenError, keyConflictError, limitMismatchError, lockAbortedError, lockLostError } from './errors.js';
export { CAPABILITY_NAMES, normalizeCapabilities, renderGuaranteesTable } from './capabilities.js';
export type { LockCapabilitiesInit } from './capabilities.js';
export type * from './backend.js';
export { LockEventEmitter } from './events.js';
export {
  normalizeAcquireOptions,
  validateDurationMs,
  validateKey,
  validateSignal,
  validateTtlMs,
  validateSemaphoreLimit,
  validateElectionValue,
  validateWaitMs,
} from './validation.js';
export type { ElectionSettings, NormalizedAcquireOptions, SemaphoreSettings } from './validation.js';
export { BaseLockProvider, DEFAULT_TTL_MS, createLockProvider } from './lock-provider.js';
export { retryableFailure, waitForGrant } from './retry.js';
export type { Wakeup, WaitForGrantOptions } from './retry.js';
export { DEFAULT_RETRY, backoffDelayMs } from './lifecycle/backoff.js';
export { retryCall } from './lifecycle/retry-call.js';
export type { RetryCallOptions } from './lifecycle/retry-call.js';
export { NEVER_ABORTED, settledBy, sleep, waitFor } from './lifecycle/wait.js';
export type { AbortLike, WaitOptions, WaitOutcome } from './lifecycle/wait.js';
export { DRIFT_FIXED_MS, driftMarginMs, validityDeadline } from './lifecycle/drift.js';
export { withRequestTimeout } from './lifecycle/timeout.js';
export { SlotList } from './lifecycle/slot-list.js';
export type { Slotted } from './lifecycle/slot-list.js';
export { DeadlineQueue } from './lifecycle/deadline-queue.js';
export { RequestDeadlines } from './lifecycle/request-deadlines.js';
export { InFlight } from './lifecycle/in-flight.js';
export { KeyCache } from './key-cache.js';
export { TurnCork } from './lifecycle/turn-cork.js';
export type { CorkableSocket, TurnCorkOptions } from './lifecycle/turn-cork.js';
export type { RequestDeadlineHandlers } from './lifecycle/request-deadlines.js';
export type { DeadlineEntry } from './lifecycle/deadline-queue.js';
export { BackgroundReleases, MAX_RELEASE_ATTEMPTS } from './lifecycle/background-release.js';
export type { ReleaseJob } from './lifecycle/background-release.js';
export { SessionKeeper } from './lifecycle/session-keeper.js';
export type { SessionKeeperOptions } from './lifecycle/session-keeper.js';
export { readAdapterOptions, validateRequestTimeoutMs } from './lifecycle/adapter-options.js';
export type { StoreGrant, StoreRequest } from './memory/memory-lock-store.js';
export type { SemaphoreStoreGrant, SemaphoreStoreRequest } from './memory/memory-semaphores.js';
export type { ElectionStoreRequest } from './memory/memory-elections.js';
