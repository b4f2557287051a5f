/**
 * A waiting acquire listens to its call's own abort (`request.waitSignal`) and never makes core build
 * the call's AbortSignal: no AbortController is constructed while it queues, watches its predecessor
 * and is aborted by its caller. The abort still ends the wait with the caller's reason, and the
 * contender (or lease) node it created is deleted. Reads outside an acquire call (inspect, leader) make
 * none either.
 */
import { randomUUID } from 'node:crypto';
import { abortWhileWaiting, countAbortControllers } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { SEMAPHORES_SEGMENT } from '../src/semaphore-paths.js';
import { childrenOf, expectNoOrphans, rawClient } from './znodes.js';

// One server for the providers and the raw client: reads then see every write in order.
const zkConnectionString = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
const ROOT = '/fencelock-wait-signal';
// Two providers: waiters of one provider queue in core, and only its head reaches ZooKeeper.
const holders = createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT, sessionTimeoutMs: 10_000 });
const waiters = createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT, sessionTimeoutMs: 10_000 });
let raw: Client | undefined;

beforeAll(async () => {
  raw = await rawClient(zkConnectionString);
  // Both sessions open before anything is counted.
  await Promise.all([holders.inspect('warm-up'), waiters.inspect('warm-up')]);
});

afterAll(async () => {
  await Promise.all([holders.close(), waiters.close()]);
  raw?.close();
}, 30_000);

function client(): Client {
  if (raw === undefined) throw new Error('no raw client');
  return raw;
}

describe("a waiting acquire and its call's abort (waitSignal)", () => {
  it('a lock acquire queued behind a holder and aborted by its caller rejects with the reason, made no AbortController, and leaves only the holder', async () => {
    const key = `wait-signal:${randomUUID()}`;
    const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
    const held = await holders.acquire(key);
    try {
      const reason = new Error('caller gave up');
      const { result, made } = await abortWhileWaiting(waiters, key, (signal) => waiters.acquire(key, { waitMs: 60_000, signal }), reason);
      expect(result).toMatchObject({ code: 'LOCK_ABORTED', key, cause: reason });
      expect(made).toBe(0);
      // The waiter's contender node was deleted: the holder's is the only one left.
      await expectNoOrphans(client(), lockPath, 10_000, await holderNodes(lockPath, held.ownerId));
      expect(await childrenOf(client(), lockPath)).toHaveLength(1);
    } finally {
      await held.release();
    }
  });

  it('a semaphore acquire waiting for a permit and aborted by its caller rejects with the reason, made no AbortController, and leaves only the holder', async () => {
    const key = `wait-signal:${randomUUID()}`;
    const path = `${ROOT}/${SEMAPHORES_SEGMENT}/${encodeKeySegment(key)}`;
    const held = await holders.acquireSemaphore(key, { limit: 1 });
    try {
      const reason = new Error('caller gave up');
      const { result, made } = await abortWhileWaiting(waiters, key, (signal) => waiters.acquireSemaphore(key, { limit: 1, waitMs: 60_000, signal }), reason);
      expect(result).toMatchObject({ code: 'LOCK_ABORTED', key, cause: reason });
      expect(made).toBe(0);
      // The waiter's lease node and its mutex node were deleted: the holder's lease is all that is left.
      await expectNoOrphans(client(), `${path}/leases`, 10_000, await holderNodes(`${path}/leases`, held.ownerId));
      await expectNoOrphans(client(), `${path}/locks`, 10_000);
      expect(await childrenOf(client(), `${path}/leases`)).toHaveLength(1);
    } finally {
      await held.release();
    }
  });
});

describe('reads outside an acquire call', () => {
  it('inspect, inspectSemaphore and leader read a held key without making an AbortController, and see its holder', async () => {
    const key = `wait-signal-reads:${randomUUID()}`;
    const held = await holders.acquire(key);
    const permit = await holders.acquireSemaphore(key, { limit: 2 });
    const leader = await holders.campaign(key, { value: 'me' });
    try {
      const { result, made } = await countAbortControllers(() =>
        Promise.all([waiters.inspect(key), waiters.inspectSemaphore(key), waiters.leader(key)]),
      );
      expect(made).toBe(0);
      const [lock, semaphore, elected] = result;
      expect(lock?.holders.map((holder) => holder.ownerId)).toEqual([held.ownerId]);
      expect(semaphore?.holders.map((holder) => holder.ownerId)).toEqual([permit.ownerId]);
      expect(elected?.value).toBe('me');
    } finally {
      await Promise.all([held.release(), permit.release(), leader.resign()]);
    }
  });
});

/** The children of `path` whose names carry `ownerId` (the holder's nodes). */
async function holderNodes(path: string, ownerId: string): Promise<string[]> {
  return (await childrenOf(client(), path)).filter((child) => child.includes(ownerId));
}
