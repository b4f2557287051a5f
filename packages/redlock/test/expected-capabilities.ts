import type { LockCapabilities } from '@fencelock/core';

/** What the redlock provider must report (an assertion in the suite, never a switch). */
export const REDLOCK_EXPECTED_CAPABILITIES: Partial<LockCapabilities> = {
  fencing: 'none',
  lossDetection: true,
  extend: true,
  notify: true,
  fifo: false,
  readWrite: false,
  expiry: 'per-lock',
  ttlResolutionMs: 1,
  minTtlMs: 10,
  deletionNotice: 'renewal',
  semaphore: 'none',
  election: 'polled',
};
