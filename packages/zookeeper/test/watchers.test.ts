/**
 * Waits that give up leave no watcher behind. node-zookeeper-client keeps every watcher function it
 * was handed until the watched node changes: an attempt that registered a function of its own and
 * then timed out (or was aborted) would leave it there for as long as the holder holds. The count is
 * read from the client's own registry (its WatcherManager), on the client the waiting provider uses.
 */
import { randomUUID } from 'node:crypto';
import { nextEvent } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import type { Client } from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { childrenOf, rawClient } from './znodes.js';

const ROOT = '/fencelock-watchers';
const GIVE_UPS = 16;
const clients: Client[] = [];
const providers: ZooKeeperLockProvider[] = [];

afterAll(async () => {
  await Promise.allSettled(providers.map((provider) => provider.close()));
  for (const client of clients) client.close();
});

interface Registry {
  readonly listeners: (event: string) => unknown[];
}
type WatcherMaps = Record<'dataWatchers' | 'existenceWatchers' | 'childWatchers', Record<string, Registry>>;

/** Watcher functions the client holds, per watched path (every kind of watch counted). */
function registeredWatchers(client: Client): Map<string, number> {
  const manager = (client as unknown as { connectionManager: { watcherManager: WatcherMaps } }).connectionManager.watcherManager;
  const counts = new Map<string, number>();
  for (const kind of ['dataWatchers', 'existenceWatchers', 'childWatchers'] as const) {
    for (const [path, emitter] of Object.entries(manager[kind])) {
      const count = emitter.listeners('notification').length;
      if (count > 0) counts.set(path, (counts.get(path) ?? 0) + count);
    }
  }
  return counts;
}

it(`${GIVE_UPS} waits that time out or are aborted on a held lock leave at most one watcher on the holder's node`, async () => {
  const { zkConnectionString } = topology();
  const waiterClient = await rawClient(zkConnectionString);
  clients.push(waiterClient);
  const holder = createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT });
  const waiter = createZooKeeperLockProvider({ client: waiterClient, root: ROOT });
  providers.push(holder, waiter);
  const key = `give-up:${randomUUID()}`;
  const lock = await holder.acquire(key);
  for (let index = 0; index < GIVE_UPS; index += 1) {
    const queued = nextEvent(waiter, 'contended', (event) => event.key === key, 10_000);
    if (index % 2 === 0) {
      // Long enough for the attempt to reach its watch (create, listing, watch: a few ms here).
      await expect(waiter.acquire(key, { waitMs: 300 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
      await queued;
    } else {
      const controller = new AbortController();
      const waiting = waiter.acquire(key, { waitMs: 30_000, signal: controller.signal });
      await queued;
      controller.abort();
      await expect(waiting).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
    }
  }
  // Every give-up deleted its contender node: only the holder's is left.
  const path = `${ROOT}/${encodeKeySegment(key)}`;
  expect(await childrenOf(waiterClient, path)).toHaveLength(1);
  const watchers = registeredWatchers(waiterClient);
  // Only the holder's node was ever watched, and by one function at most (the watch of a timed-out
  // wait stays registered with the server until the node changes: that is one, not one per wait).
  expect([...watchers.keys()].every((watched) => watched.startsWith(`${path}/`))).toBe(true);
  expect([...watchers.values()].reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(1);
  // The waiter still hears the release: a new wait is woken by the shared watch.
  const next = waiter.acquire(key, { waitMs: 30_000 });
  await nextEvent(waiter, 'contended', (event) => event.key === key, 10_000);
  expect(await lock.release()).toBe(true);
  const held = await next;
  expect(held.isHeld()).toBe(true);
  expect(await held.release()).toBe(true);
  expect(registeredWatchers(waiterClient).size).toBe(0);
}, 60_000);
