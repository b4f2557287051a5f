/**
 * The semaphore's znodes as other clients see them (the layout Curator's InterProcessSemaphoreV2
 * shares), what another client's lease nodes count for, and a lease node deleted behind its holder's
 * back, against the shared ensemble.
 */
import { randomUUID } from 'node:crypto';
import { abortedWithin } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { type Client, CreateMode } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { SEMAPHORES_SEGMENT } from '../src/semaphore-paths.js';
import { childrenOf, expectNoOrphans, rawClient } from './znodes.js';

// One server for the provider and the raw client: reads then see every write in order.
const zkConnectionString = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
const ROOT = '/fencelock-semaphore-znodes';
let raw: Client | undefined;
const locks = createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT, sessionTimeoutMs: 10_000 });

beforeAll(async () => {
  raw = await rawClient(zkConnectionString);
});

afterAll(async () => {
  await locks.close();
  if (raw !== undefined) await expectNoOrphans(raw, `${ROOT}/${SEMAPHORES_SEGMENT}`, 15_000);
  raw?.close();
}, 30_000);

function client(): Client {
  if (raw === undefined) throw new Error('no raw client');
  return raw;
}

function getData(path: string): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => client().getData(path, (error, data) => (error ? reject(error) : resolve(data ?? undefined))));
}

/** Creates `path` and its missing parents (persistent), then an ephemeral sequential child `name` with `data`. */
async function createForeignLease(leases: string, name: string, data: Buffer): Promise<string> {
  await new Promise<void>((resolve, reject) => client().mkdirp(leases, (error) => (error ? reject(error) : resolve())));
  return new Promise((resolve, reject) =>
    client().create(`${leases}/${name}`, data, CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) => (error ? reject(error) : resolve(path))),
  );
}

function remove(path: string): Promise<void> {
  return new Promise((resolve, reject) => client().remove(path, -1, (error) => (error ? reject(error) : resolve())));
}

describe('semaphore znodes', () => {
  it("lives at <root>/#semaphores/<encoded key> as Curator's layout: an emptied locks mutex and one _c_<owner>-lease- node with the limit", async () => {
    const key = `jobs/${randomUUID()}`;
    const path = `${ROOT}/${SEMAPHORES_SEGMENT}/${encodeKeySegment(key)}`;
    const permit = await locks.acquireSemaphore(key, { limit: 3, metadata: 'batch 7' });
    try {
      expect((await childrenOf(client(), path)).sort()).toEqual(['leases', 'locks']);
      // The mutex is held only while a lease is being taken.
      expect(await childrenOf(client(), `${path}/locks`)).toEqual([]);
      const leases = await childrenOf(client(), `${path}/leases`);
      expect(leases).toHaveLength(1);
      expect(leases[0]).toMatch(new RegExp(`^_c_${permit.ownerId}-lease-\\d{10}$`));
      expect(JSON.parse((await getData(`${path}/leases/${leases[0]}`))?.toString('utf8') ?? '')).toEqual({ limit: 3, metadata: 'batch 7' });
      // Nothing of it under the lock path of the same key.
      expect(await childrenOf(client(), `${ROOT}/${encodeKeySegment(key)}`)).toEqual([]);
    } finally {
      expect(await permit.release()).toBe(true);
    }
  });

  it("counts another client's lease node as a holder, and checks the limit such a node carries", async () => {
    const key = `foreign-${randomUUID()}`;
    const leases = `${ROOT}/${SEMAPHORES_SEGMENT}/${key}/leases`;
    // A Curator lease with its client's default data (the local address): opaque, but it holds a lease.
    const curatorLike = await createForeignLease(leases, `_c_${randomUUID()}-lease-`, Buffer.from('127.0.0.1'));
    try {
      expect(await locks.tryAcquireSemaphore(key, { limit: 1 }), 'the only lease is taken').toBeUndefined();
      const info = await locks.inspectSemaphore(key);
      // Curator holders only: the limit is unknown, every node is a holder.
      expect(info).toMatchObject({ limit: 1, holders: [{ mode: 'semaphore', permits: 1, metadata: '127.0.0.1' }] });
      const second = await locks.tryAcquireSemaphore(key, { limit: 2 });
      expect(second, 'the second of 2').toBeDefined();
      await second?.release();
    } finally {
      await remove(curatorLike);
    }
    // A node carrying the limit as ours do (a Curator semaphore given it with setNodeData).
    const declared = await createForeignLease(leases, `_c_${randomUUID()}-lease-`, Buffer.from('{"limit":3}'));
    try {
      await expect(locks.tryAcquireSemaphore(key, { limit: 2 })).rejects.toMatchObject({ code: 'LOCK_LIMIT_MISMATCH', key });
      expect(await childrenOf(client(), leases), 'the refused call took nothing').toEqual([declared.slice(leases.length + 1)]);
      const agreed = await locks.tryAcquireSemaphore(key, { limit: 3 });
      expect(agreed).toBeDefined();
      await agreed?.release();
    } finally {
      await remove(declared);
    }
    // Once empty, our provider removes the znodes it shares with such clients.
    expect(await (await locks.acquireSemaphore(key, { limit: 1 })).release()).toBe(true);
  });

  it('aborts the holder with LOCK_LOST when its lease node is deleted behind its back', async () => {
    const key = `deleted-${randomUUID()}`;
    const leases = `${ROOT}/${SEMAPHORES_SEGMENT}/${key}/leases`;
    const permit = await locks.acquireSemaphore(key, { limit: 2 });
    const [lease] = await childrenOf(client(), leases);
    await remove(`${leases}/${lease}`);
    expect(await abortedWithin(permit.signal, 10_000, 'the loss of the deleted lease')).toMatchObject({ code: 'LOCK_LOST', key });
    expect(permit.isHeld()).toBe(false);
    expect(await permit.release()).toBe(false);
  });
});
