/**
 * With `naming: 'kazoo'` the provider keeps a lock's znode after its last contender left: kazoo's
 * `Lock` creates that parent once per object (on its first acquire) and a long-lived one reused on
 * the path would then fail with NoNodeError. `removeEmptyParents: true` still asks for the cleanup.
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { KazooDriver } from './kazoo-driver.js';
import { rawClient } from './znodes.js';

const ROOT = '/fencelock-kazoo-naming';
// One server for everyone: its reads see the writes of kazoo, our provider and the raw client in order.
const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
let raw: Client | undefined;
let kazoo: KazooDriver | undefined;
// Lock znodes these cases keep on purpose, deleted at the end.
const kept = new Set<string>();

beforeAll(async () => {
  raw = await rawClient(server);
  kazoo = await KazooDriver.start(server);
}, 30_000);

afterAll(async () => {
  await kazoo?.close();
  for (const path of kept) await new Promise<void>((resolve) => raw?.remove(path, -1, () => resolve()));
  raw?.close();
}, 30_000);

function exists(path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (raw === undefined) throw new Error('no raw client');
    raw.exists(path, (error, stat) => (error ? reject(error) : resolve(stat !== null && stat !== undefined)));
  });
}

function lockPathOf(key: string): string {
  const path = `${ROOT}/${encodeKeySegment(key)}`;
  kept.add(path);
  return path;
}

describe("kazoo naming and the lock's znode", () => {
  it('is kept after our last release by default (close() runs every pending parent removal first)', async () => {
    const locks = createZooKeeperLockProvider({ connectionString: server, root: ROOT, naming: 'kazoo' });
    const key = `kept:${randomUUID()}`;
    try {
      expect(await (await locks.acquire(key)).release()).toBe(true);
    } finally {
      await locks.close();
    }
    expect(await exists(lockPathOf(key))).toBe(true);
  });

  it('a long-lived kazoo Lock on the same path still acquires after our release', async () => {
    const key = `long-lived:${randomUUID()}`;
    const path = lockPathOf(key);
    const driver = kazoo!;
    const kazooLock = await driver.lock(path, 'kazoo-service');
    expect(await driver.acquire(kazooLock)).toEqual({ ok: true });
    expect(await driver.release(kazooLock)).toEqual({ ok: true });
    const locks = createZooKeeperLockProvider({ connectionString: server, root: ROOT, naming: 'kazoo' });
    try {
      expect(await (await locks.acquire(key, { waitMs: 10_000 })).release()).toBe(true);
    } finally {
      await locks.close();
    }
    // The same kazoo object again: it does not create the parent a second time.
    expect(await driver.acquire(kazooLock)).toEqual({ ok: true });
    expect(await driver.release(kazooLock)).toEqual({ ok: true });
  }, 60_000);

  it('removeEmptyParents: true still removes it (for paths no long-lived kazoo Lock uses)', async () => {
    const locks = createZooKeeperLockProvider({ connectionString: server, root: ROOT, naming: 'kazoo', removeEmptyParents: true });
    const key = `removed:${randomUUID()}`;
    try {
      expect(await (await locks.acquire(key)).release()).toBe(true);
    } finally {
      await locks.close();
    }
    expect(await exists(lockPathOf(key))).toBe(false);
  });

  it('the Curator namings keep removing it by default, as Curator does with its container nodes', async () => {
    const locks = createZooKeeperLockProvider({ connectionString: server, root: ROOT });
    const key = `curator:${randomUUID()}`;
    try {
      expect(await (await locks.acquire(key)).release()).toBe(true);
    } finally {
      await locks.close();
    }
    expect(await exists(lockPathOf(key))).toBe(false);
  });
});
