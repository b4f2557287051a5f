/**
 * The part to copy: one call to the rate-limited API under a permit of a counting semaphore. Every
 * worker process takes a permit of the same key and limit before it calls, so at most `cap` calls
 * are in flight across all of them; the permit's fencing token goes with the call.
 */
import type { LockProvider } from '@fencelock/core';
import { TOKEN_HEADER } from './fake-api.js';

/** The semaphore every worker shares: one key per API, its limit the API's concurrency cap. */
export const SEMAPHORE_KEY = 'partner-api:concurrency';

/** What one call did. */
export interface CallOutcome {
  readonly status: number;
  readonly token: bigint | undefined;
  /** Whether the permit was free at once or the call waited for one. */
  readonly waited: boolean;
}

/** Calls `apiUrl` while holding one of `cap` permits; waits up to 30 s for a permit. */
export async function callUnderPermit(locks: LockProvider, apiUrl: string, cap: number): Promise<CallOutcome> {
  let waited = false;
  const stopWatching = locks.on('contended', (event) => {
    if (event.key === SEMAPHORE_KEY && event.mode === 'semaphore') waited = true;
  });
  let status: number;
  let token: bigint | undefined;
  try {
    // `await using`: the permit goes back on every exit path, also when the call throws.
    await using permit = await locks.acquireSemaphore(SEMAPHORE_KEY, { limit: cap, waitMs: 30_000 });
    token = permit.fencingToken;
    // The permit's signal aborts the call if the permit is lost (it expired, the process stalled).
    const response = await fetch(`${apiUrl}/v1/quote`, {
      headers: { [TOKEN_HEADER]: String(permit.fencingToken ?? 0n) },
      signal: AbortSignal.any([permit.signal, AbortSignal.timeout(10_000)]),
    });
    await response.arrayBuffer();
    status = response.status;
  } finally {
    stopWatching();
  }
  return { status, token, waited };
}
