/**
 * A waiting acquire listens to its call's own abort (`request.waitSignal`, through core's
 * `waitForGrant` and the release notifier's wake-up) and never makes core build the call's
 * AbortSignal: no AbortController is constructed while it retries, waits for a release notice and is
 * aborted by its caller. The abort still ends the wait with the caller's reason, and the waiter holds
 * nothing afterwards.
 */
import { randomUUID } from 'node:crypto';
import { abortWhileWaiting } from '@fencelock/conformance';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type PostgresLockProvider, createPostgresLockProvider } from '../src/index.js';
import { holderPids, postgresUrl, rawClient, semaphoreSlots } from './pg.js';

const operator = rawClient();
afterAll(async () => (await operator).end());

const made: PostgresLockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(made.splice(0).map((provider) => provider.close()));
});

/**
 * A holder's provider and a waiter's (waiters of one provider queue in core, and only the head of that
 * line reaches the server), each with its session open so that nothing but the wait is counted.
 */
async function holderAndWaiter(): Promise<{ holder: PostgresLockProvider; waiter: PostgresLockProvider }> {
  const [holder, waiter] = [0, 1].map(() => {
    const provider = createPostgresLockProvider({ connection: postgresUrl, sessionTtlMs: 3_000 });
    made.push(provider);
    return provider;
  }) as [PostgresLockProvider, PostgresLockProvider];
  await Promise.all([holder, waiter].map(async (provider) => (await provider.acquire(`warm-up:${randomUUID()}`)).release()));
  return { holder, waiter };
}

describe("a waiting acquire and its call's abort (waitSignal)", () => {
  it('a lock acquire queued behind a holder and aborted by its caller rejects with the reason, made no AbortController, and leaves only the holder', async () => {
    const { holder, waiter } = await holderAndWaiter();
    const key = `wait-signal:${randomUUID()}`;
    const held = await holder.acquire(key);
    try {
      const reason = new Error('caller gave up');
      const { result, made: controllers } = await abortWhileWaiting(waiter, key, (signal) => waiter.acquire(key, { waitMs: 60_000, signal }), reason);
      expect(result).toMatchObject({ code: 'LOCK_ABORTED', key, cause: reason });
      expect(controllers).toBe(0);
      expect(await holderPids(await operator, key)).toEqual([holder.backendPid]);
    } finally {
      await held.release();
    }
  });

  it('a semaphore acquire waiting for a permit and aborted by its caller rejects with the reason, made no AbortController, and leaves only the holder', async () => {
    const { holder, waiter } = await holderAndWaiter();
    const key = `wait-signal:${randomUUID()}`;
    const held = await holder.acquireSemaphore(key, { limit: 1 });
    try {
      const reason = new Error('caller gave up');
      const { result, made: controllers } = await abortWhileWaiting(
        waiter,
        key,
        (signal) => waiter.acquireSemaphore(key, { limit: 1, waitMs: 60_000, signal }),
        reason,
      );
      expect(result).toMatchObject({ code: 'LOCK_ABORTED', key, cause: reason });
      expect(controllers).toBe(0);
      expect((await semaphoreSlots(await operator, key)).map((slot) => slot.pid)).toEqual([holder.backendPid]);
    } finally {
      await held.release();
    }
  });
});
