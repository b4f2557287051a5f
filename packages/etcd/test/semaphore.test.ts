/**
 * What the conformance suite cannot see of the etcd semaphores: FIFO without overtaking (a request
 * for many permits holds back a later, smaller one), the session lease and an operator's delete
 * freeing a holder's permits, and the keys as `etcdctl get --prefix` shows them (the README's layout).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { abortedWithin, isPending, nextEvent, within } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { createEtcdLockProvider, escapeKeySegment } from '../src/index.js';
import { ownClientProviders } from './own-client.js';

const KEY_PREFIX = 'fencelock-semaphore-test/';
const ownClientProvider = ownClientProviders(KEY_PREFIX);
const provider = () => ownClientProvider(10_000).provider;
const { etcdEndpoints } = topology();
// Acts as an operator would, on a client of its own.
const operator = new Etcd3({ hosts: [...etcdEndpoints] });
afterAll(() => operator.close());

describe('etcd semaphores', () => {
  it('serves contenders in create-revision order: a request for 2 permits holds back a later request for 1 that would fit', async () => {
    const [a, b, c] = [provider(), provider(), provider()];
    const key = `sem-fifo:${randomUUID()}`;
    const one = await a.acquireSemaphore(key, { limit: 2 });
    const bQueued = nextEvent(b, 'contended', (event) => event.key === key, 5_000);
    const two = b.acquireSemaphore(key, { limit: 2, permits: 2, waitMs: 20_000 });
    await bQueued;
    const cQueued = nextEvent(c, 'contended', (event) => event.key === key, 5_000);
    const later = c.acquireSemaphore(key, { limit: 2, waitMs: 20_000 });
    // A free permit is there, but b asked first: c queues behind it.
    await cQueued;
    expect(await isPending(later)).toBe(true);
    expect((await c.inspectSemaphore(key))?.holders.map((holder) => holder.ownerId)).toEqual([one.ownerId]);
    expect(await one.release()).toBe(true);
    const both = await within(two, 10_000, 'the 2-permit request once the holder left');
    expect(both.permits).toBe(2);
    // b holds both permits now: c still waits (its grant would make 3 of 2).
    expect((await c.inspectSemaphore(key))?.holders.map((holder) => [holder.ownerId, holder.permits])).toEqual([[both.ownerId, 2]]);
    expect(await isPending(later)).toBe(true);
    expect(await both.release()).toBe(true);
    const last = await within(later, 10_000, 'the 1-permit request after the 2-permit one');
    expect(last.fencingToken! > both.fencingToken!).toBe(true);
    expect(both.fencingToken! > one.fencingToken!).toBe(true);
    await last.release();
  });

  it("a holder's lease revoked frees its permits to a waiter, and its handle is lost", async () => {
    const [a, b] = [provider(), provider()];
    const key = `sem-lease:${randomUUID()}`;
    const held = await a.acquireSemaphore(key, { limit: 1 });
    const queued = nextEvent(b, 'contended', (event) => event.key === key, 5_000);
    const waiting = b.acquireSemaphore(key, { limit: 1, waitMs: 20_000 });
    await queued;
    await operator.leaseClient.leaseRevoke({ ID: a.ownership(held).leaseId });
    expect(await abortedWithin(held.signal, 10_000, "the revoked holder's loss")).toMatchObject({ code: 'LOCK_LOST', key });
    const next = await within(waiting, 10_000, 'the waiter after the revoke');
    expect(next.fencingToken! > held.fencingToken!).toBe(true);
    expect(await held.release()).toBe(false);
    await next.release();
  });

  it("an operator deleting one holder's key loses that handle only, and its permit goes to the waiter", async () => {
    const [a, b, c] = [provider(), provider(), provider()];
    const key = `sem-delete:${randomUUID()}`;
    const [first, second] = [await a.acquireSemaphore(key, { limit: 2 }), await b.acquireSemaphore(key, { limit: 2 })];
    const queued = nextEvent(c, 'contended', (event) => event.key === key, 5_000);
    const waiting = c.acquireSemaphore(key, { limit: 2, waitMs: 20_000 });
    await queued;
    await operator.delete().key(a.ownership(first).etcdKey).exec();
    expect(await abortedWithin(first.signal, 10_000, "the deleted holder's loss")).toMatchObject({ code: 'LOCK_LOST', key });
    const next = await within(waiting, 10_000, 'the waiter after the delete');
    expect(second.isHeld()).toBe(true);
    expect((await c.inspectSemaphore(key))?.holders.map((holder) => holder.ownerId)).toEqual([second.ownerId, next.ownerId]);
    await Promise.all([second.release(), next.release()]);
  });

  it('a waiter behind more than 16 keys watches the whole semaphore with one watch, and a release lets it in', async () => {
    const a = provider();
    const key = `sem-wide:${randomUUID()}`;
    const limit = 20;
    const held = [];
    for (let index = 0; index < limit; index += 1) held.push(await a.acquireSemaphore(key, { limit }));
    const client = new Etcd3({ hosts: [...etcdEndpoints] });
    let watches = 0;
    const watch = client.watch.bind(client);
    client.watch = () => {
      watches += 1;
      return watch();
    };
    // Re-checks far apart: only the watch can let it in within the bound below.
    const b = createEtcdLockProvider({ client, keyPrefix: KEY_PREFIX, recheckIntervalMs: 60_000 });
    try {
      const queued = nextEvent(b, 'contended', (event) => event.key === key, 5_000);
      const waiting = b.acquireSemaphore(key, { limit, waitMs: 20_000 });
      await queued;
      expect(await held.pop()!.release()).toBe(true);
      const next = await within(waiting, 10_000, 'the waiter after one release');
      // One wait step on one range watch, not 20 watches on the 20 keys ahead.
      expect(watches).toBe(1);
      await next.release();
    } finally {
      await Promise.all(held.map((handle) => handle.release()));
      await b.close();
      client.close();
    }
  });

  it('keeps its keys where the README says: `etcdctl get --prefix` shows the semaphore beside a lock of the same key', async () => {
    const keyPrefix = `fencelock-semaphore-layout-${randomUUID()}/`;
    const client = new Etcd3({ hosts: [...etcdEndpoints] });
    const locks = createEtcdLockProvider({ client, keyPrefix });
    try {
      const key = 'pool/a';
      const lock = await locks.acquire(key);
      const permits = await locks.acquireSemaphore(key, { limit: 3, permits: 2, metadata: 'worker-7' });
      const lease = BigInt(locks.ownership(permits).leaseId).toString(16);
      // Plain output: each key, then its value, one a line. The semaphore's segment starts with NUL.
      const output = execFileSync('etcdctl', [`--endpoints=${etcdEndpoints.join(',')}`, 'get', '--prefix', keyPrefix], {
        env: { ...process.env, ETCDCTL_API: '3' },
        encoding: 'utf8',
      });
      const lines = output.split('\n').filter((line) => line !== '');
      const pairs = new Map<string, string>();
      for (let index = 0; index + 1 < lines.length; index += 2) pairs.set(lines[index]!, lines[index + 1]!);
      const lockKey = `${keyPrefix}${escapeKeySegment(key)}/${lease}`;
      const semaphoreKey = `${keyPrefix}\u0000fencelock-semaphore/pool%2Fa/${lease}`;
      expect([...pairs.keys()].sort()).toEqual([lockKey, semaphoreKey].sort());
      expect(JSON.parse(pairs.get(semaphoreKey)!)).toEqual({
        fencelock: 1,
        owner: permits.ownerId,
        mode: 'semaphore',
        limit: 3,
        permits: 2,
        metadata: 'worker-7',
      });
      expect(JSON.parse(pairs.get(lockKey)!)).toMatchObject({ owner: lock.ownerId, mode: 'exclusive' });
      // The fencing token is the key's create revision, and the key lives on the session lease.
      const [kv] = (await client.get(semaphoreKey).exec()).kvs;
      expect(BigInt(kv!.create_revision)).toBe(permits.fencingToken);
      expect(kv!.lease).toBe(locks.ownership(permits).leaseId);
      await Promise.all([lock.release(), permits.release()]);
    } finally {
      await locks.close();
      client.close();
    }
  });
});
