/**
 * Metadata is the data of the holder's znode. ZooKeeper keeps "no data" (null, written by a create
 * without data) apart from empty data: `acquire(key)` writes none and `inspect()` shows `undefined`;
 * `acquire(key, { metadata: '' })` writes zero bytes and shows `''`, as every other provider does.
 * Nodes of other libraries show their data: kazoo's `Lock` writes its identifier (zero bytes without
 * one, so `''`, as kazoo's own `contenders()` shows it), Curator its client's default data (the
 * local address).
 */
import { randomUUID } from 'node:crypto';
import { type ZooKeeperLockPeer, startCuratorLockPeer, topology } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { KazooDriver } from './kazoo-driver.js';

const ROOT = '/fencelock-metadata';
// One server for the peers and our provider: its reads see their writes in order.
const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
let locks: ZooKeeperLockProvider | undefined;
let kazoo: KazooDriver | undefined;

beforeAll(async () => {
  locks = createZooKeeperLockProvider({ connectionString: server, root: ROOT });
  kazoo = await KazooDriver.start(server);
}, 30_000);

afterAll(async () => {
  await locks?.close();
  await kazoo?.close();
}, 30_000);

function provider(): ZooKeeperLockProvider {
  if (locks === undefined) throw new Error('no provider');
  return locks;
}

function driver(): KazooDriver {
  if (kazoo === undefined) throw new Error('no kazoo driver');
  return kazoo;
}

describe('metadata round-trips through inspect()', () => {
  const cases: { name: string; metadata: string | undefined }[] = [
    { name: "'' stays ''", metadata: '' },
    { name: 'none stays undefined', metadata: undefined },
    { name: 'text stays text', metadata: 'worker-7 é ✓' },
  ];
  for (const { name, metadata } of cases) {
    it(name, async () => {
      const key = `metadata:${randomUUID()}`;
      const lock = await provider().acquire(key, metadata === undefined ? {} : { metadata });
      try {
        const info = await provider().inspect(key);
        expect(info?.holders).toHaveLength(1);
        expect(info?.holders[0]?.metadata).toBe(metadata);
      } finally {
        await lock.release();
      }
    });
  }

  it("kazoo's Lock: its identifier shows as metadata, and '' without one", async () => {
    const key = `metadata-kazoo:${randomUUID()}`;
    const path = `${ROOT}/${encodeKeySegment(key)}`;
    for (const identifier of ['kazoo-holder', undefined]) {
      const lock = await driver().lock(path, identifier);
      expect(await driver().acquire(lock)).toEqual({ ok: true });
      try {
        const holders = (await provider().inspect(key))?.holders ?? [];
        expect(holders).toHaveLength(1);
        // kazoo writes `identifier or ""`: zero bytes without one.
        expect(holders[0]?.metadata).toBe(identifier ?? '');
      } finally {
        expect(await driver().release(lock)).toEqual({ ok: true });
      }
    }
  }, 60_000);

  it("Curator's InterProcessMutex: its node's data (the client's default, the local address) shows as metadata", async () => {
    const key = `metadata-curator:${randomUUID()}`;
    let peer: ZooKeeperLockPeer | undefined;
    try {
      peer = startCuratorLockPeer({ connectionString: server, path: `${ROOT}/${encodeKeySegment(key)}` });
      await peer.held;
      const holders = (await provider().inspect(key))?.holders ?? [];
      expect(holders).toHaveLength(1);
      expect(holders[0]?.metadata).toMatch(/^\S+$/);
      await peer.release();
    } finally {
      peer?.kill();
    }
  }, 90_000);
});
