/**
 * A waiting acquire listens to its call's own abort (`request.waitSignal`) and never makes core build
 * the call's AbortSignal: no AbortController is constructed while it queues, watches the key before
 * its own and is aborted by its caller. The abort still ends the wait with the caller's reason, and
 * the waiter key it put is deleted.
 */
import { randomUUID } from 'node:crypto';
import { abortWhileWaiting } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { type EtcdLockProvider, lockName } from '../src/index.js';
import { semaphoreName } from '../src/key-encoding.js';
import { ownClientProviders } from './own-client.js';

const KEY_PREFIX = 'fencelock-wait-signal/';
const ownClientProvider = ownClientProviders(KEY_PREFIX);
// Looks at the keys the providers leave, on a client of its own.
const operator = new Etcd3({ hosts: [...topology().etcdEndpoints] });
afterAll(() => operator.close());

/**
 * A holder's provider and a waiter's (waiters of one provider queue in core, and only the head of that
 * line reaches etcd), the waiter's lease already open so that nothing but the wait is counted.
 */
async function holderAndWaiter(): Promise<{ holder: EtcdLockProvider; waiter: EtcdLockProvider }> {
  const holder = ownClientProvider(10_000).provider;
  const waiter = ownClientProvider(10_000).provider;
  await (await waiter.acquire(`warm-up:${randomUUID()}`)).release();
  return { holder, waiter };
}

/** The keys under `name`'s range (`<name>/…`), as etcd has them now. */
async function keysOf(name: string): Promise<string[]> {
  return operator.getAll().prefix(`${name}/`).keys();
}

describe("a waiting acquire and its call's abort (waitSignal)", () => {
  it('a lock acquire queued behind a holder and aborted by its caller rejects with the reason, made no AbortController, and leaves only the holder', async () => {
    const { holder, waiter } = await holderAndWaiter();
    const key = `wait-signal:${randomUUID()}`;
    const held = await holder.acquire(key);
    try {
      const reason = new Error('caller gave up');
      const { result, made } = await abortWhileWaiting(waiter, key, (signal) => waiter.acquire(key, { waitMs: 60_000, signal }), reason);
      expect(result).toMatchObject({ code: 'LOCK_ABORTED', key, cause: reason });
      expect(made).toBe(0);
      // The waiter's key was deleted before the acquire settled: the holder's is the only one left.
      expect(await keysOf(lockName(key, KEY_PREFIX, 'escape'))).toHaveLength(1);
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
      const { result, made } = await abortWhileWaiting(
        waiter,
        key,
        (signal) => waiter.acquireSemaphore(key, { limit: 1, waitMs: 60_000, signal }),
        reason,
      );
      expect(result).toMatchObject({ code: 'LOCK_ABORTED', key, cause: reason });
      expect(made).toBe(0);
      expect(await keysOf(semaphoreName(key, KEY_PREFIX))).toHaveLength(1);
    } finally {
      await held.release();
    }
  });
});
