/**
 * No herd effect: with 20 waiters queued on one lock, each release wakes exactly one waiter (one
 * watch notification to the next waiter), counted at the client as the server delivers them; waiters
 * of one process queue in core and share one contender node. Counted apart:
 * - the holder hears its own delete, from the watch every holder keeps (how it notices a node deleted
 *   behind its back): on its own node once a contender came, else on the lock znode;
 * - each acquisition's first listing leaves a child watch on the lock znode (on a free lock it is
 *   the holder's watch), which fires once, at the next change of the lock's contenders. It is never
 *   set again by a waiter, so it costs each client at most one notification per acquisition.
 * Also exercises providers built on a client the caller owns.
 */
import { State } from 'node-zookeeper-client';
import { childrenOf } from './znodes.js';
import { randomUUID } from 'node:crypto';
import { nextEvent, within } from '@fencelock/conformance';
import { topology, waitFor } from '@fencelock/test-infra';
import { type Client, createClient } from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider } from '../src/index.js';

const { zkConnectionString } = topology();
const WAITERS = 20;
const clients: Client[] = [];

/** Watch notifications one client received, split by whose node they were about. */
interface Notifications {
  /** About another client's node: a waiter woken by its predecessor's release. */
  readonly wakeUps: number;
  /** About a node of one of `ownerIds` (this client's locks): the holder hearing its own release. */
  readonly own: number;
  /** About the lock znode: its contenders changed (a first listing's watch). */
  readonly lockZnode: number;
}

/** A connected client whose delivered watch notifications are recorded (by path). */
async function countingClient(lockZnode: string): Promise<{ client: Client; notifications: (ownerIds: readonly string[]) => Notifications }> {
  const client = createClient(zkConnectionString, { sessionTimeout: 5_000, spinDelay: 200 });
  clients.push(client);
  const paths: string[] = [];
  // Every notification the server sends passes through the watcher manager, wanted or not.
  const manager = (client as unknown as { connectionManager: { watcherManager: { emit: (event: { path: string }) => void } } })
    .connectionManager.watcherManager;
  const emit = manager.emit.bind(manager);
  manager.emit = (event) => {
    paths.push(event.path);
    emit(event);
  };
  const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
  client.connect();
  await within(connected, 10_000, 'a ZooKeeper connection');
  return {
    client,
    notifications: (ownerIds) => {
      // Our node names carry the owner id of their acquisition.
      const own = paths.filter((path) => ownerIds.some((ownerId) => path.includes(ownerId))).length;
      const ofLockZnode = paths.filter((path) => path === lockZnode).length;
      return { wakeUps: paths.length - own - ofLockZnode, own, lockZnode: ofLockZnode };
    },
  };
}

afterAll(() => {
  for (const client of clients) client.close();
});

it(`one release wakes exactly one of ${WAITERS} waiters (one wake-up notification per release)`, async () => {
  const key = `herd:${randomUUID()}`;
  const members = await Promise.all(
    Array.from({ length: WAITERS + 1 }, async () => {
      const { client, notifications } = await countingClient(`/fencelock-herd/${key}`);
      const provider = createZooKeeperLockProvider({ client, root: '/fencelock-herd' });
      return { provider, notifications };
    }),
  );
  const providers: ZooKeeperLockProvider[] = members.map((m) => m.provider);
  // The owner ids of each member's locks, in member order.
  const owners: string[][] = members.map(() => []);
  try {
    const [first, ...waiters] = providers as [ZooKeeperLockProvider, ...ZooKeeperLockProvider[]];
    const holder = await first.acquire(key);
    owners[0]?.push(holder.ownerId);
    const order: number[] = [];
    const done: Promise<void>[] = [];
    for (const [index, waiter] of waiters.entries()) {
      const queued = nextEvent(waiter, 'contended', (e) => e.key === key, 10_000);
      done.push(
        waiter.acquire(key, { waitMs: 60_000 }).then(async (lock) => {
          order.push(index);
          owners[index + 1]?.push(lock.ownerId);
          await lock.release();
        }),
      );
      await queued;
    }
    // The holder's and each waiter's first-listing watch fired as the next waiter came; the last
    // waiter's is still set. Each reaches its client on that client's own connection: waited for.
    const expected = members.map((_, index) => (index < WAITERS ? 1 : 0));
    const lockZnodeCounts = (): number[] => members.map((m, index) => m.notifications(owners[index] ?? []).lockZnode);
    await waitFor(async () => (lockZnodeCounts().every((count, index) => count === expected[index]) ? true : undefined), {
      what: "each client's first-listing watch to fire",
      timeoutMs: 10_000,
      intervalMs: 5,
    });
    const before = members.map((m, index) => m.notifications(owners[index] ?? []));
    expect(before.every((count) => count.wakeUps === 0 && count.own === 0)).toBe(true);
    await holder.release();
    await within(Promise.all(done), 60_000, 'every waiter to acquire and release');
    expect(order).toEqual(waiters.map((_, index) => index));
    const perClient = members.map((m, index) => m.notifications(owners[index] ?? []));
    // 21 releases; the 20 that had a waiter behind them each woke exactly that one waiter.
    expect(perClient[0]?.wakeUps).toBe(0);
    expect(perClient.slice(1).map((count) => count.wakeUps)).toEqual(waiters.map(() => 1));
    // Each holder heard its own release once, from the watch on its own node (a contender had come to
    // each, or each had waited); and each client's first-listing watch fired once.
    expect(perClient.map((count) => count.own)).toEqual(members.map(() => 1));
    expect(perClient.map((count) => count.lockZnode)).toEqual(members.map(() => 1));
    const wakeUps = perClient.reduce((sum, count) => sum + count.wakeUps, 0);
    const own = perClient.reduce((sum, count) => sum + count.own, 0);
    console.log(`watch notifications: ${wakeUps} wake-ups for ${WAITERS} releases with a waiter (${wakeUps / WAITERS} per release), plus ${own} to releasing holders`);
  } finally {
    await Promise.allSettled(providers.map((p) => p.close()));
  }
}, 120_000);

it('with 40 waiters in one process, one contender node waits at the backend and the 40 hand-offs cost one wake-up notification', async () => {
  const key = `herd:${randomUUID()}`;
  const path = `/fencelock-herd/${key}`;
  const WAITING = 40;
  const holderSide = await countingClient(path);
  const waiterSide = await countingClient(path);
  const holder = createZooKeeperLockProvider({ client: holderSide.client, root: '/fencelock-herd' });
  const waiter = createZooKeeperLockProvider({ client: waiterSide.client, root: '/fencelock-herd' });
  const waiterOwners: string[] = [];
  try {
    const lock = await holder.acquire(key);
    const order: number[] = [];
    const done: Promise<void>[] = [];
    for (let index = 0; index < WAITING; index += 1) {
      const queued = nextEvent(waiter, 'contended', (e) => e.key === key, 10_000);
      done.push(
        waiter.acquire(key, { waitMs: 60_000 }).then(async (held) => {
          order.push(index);
          waiterOwners.push(held.ownerId);
          await held.release();
        }),
      );
      await queued;
    }
    // Core queues a process's waiters of one key: only the head has a node (read through the waiter's
    // own client, whose server has applied the waiter's create).
    expect(await childrenOf(waiterSide.client, path)).toHaveLength(2);
    expect(waiterSide.notifications(waiterOwners)).toEqual({ wakeUps: 0, own: 0, lockZnode: 0 });
    // The head's create fired the holder's first-listing watch, on the holder's own connection: once
    // it is in, the holder has moved its watch to its own node (a read sent before its delete).
    await waitFor(async () => (holderSide.notifications([lock.ownerId]).lockZnode === 1 ? true : undefined), {
      what: "the holder's first-listing watch to fire",
      timeoutMs: 10_000,
      intervalMs: 5,
    });
    await lock.release();
    await within(Promise.all(done), 60_000, 'every waiter to acquire and release');
    expect(order).toEqual(Array.from({ length: WAITING }, (_, index) => index));
    // The head watched only the holder's node; every later hand-off passed inside the process. Each
    // holder heard its own release (the watch on its own node; the next head, queued behind a lock of
    // its own session, waited on that same watch), and nothing else. Only the head's first listing
    // left a watch on the lock znode (the holder was another process's): the others' listings were
    // made while their session held the lock, and left none.
    expect(holderSide.notifications([lock.ownerId])).toEqual({ wakeUps: 0, own: 1, lockZnode: 1 });
    expect(waiterSide.notifications(waiterOwners)).toEqual({ wakeUps: 1, own: WAITING, lockZnode: 1 });
  } finally {
    await Promise.allSettled([holder.close(), waiter.close()]);
  }
}, 120_000);

it('a provider on a given client: close() ends waits and deletes their nodes, and leaves the client open', async () => {
  const key = `given-${randomUUID()}`;
  const path = `/fencelock-herd/${key}`;
  const [holderSide, waiterSide] = [await countingClient(path), await countingClient(path)];
  const holder = createZooKeeperLockProvider({ client: holderSide.client, root: '/fencelock-herd' });
  const waiter = createZooKeeperLockProvider({ client: waiterSide.client, root: '/fencelock-herd' });
  const lock = await holder.acquire(key);
  const queued = nextEvent(waiter, 'contended', (e) => e.key === key, 10_000);
  const waiting = waiter.acquire(key, { waitMs: 30_000 }).catch((error: unknown) => error);
  await queued;
  // Read through the waiter's own client: its server has applied the waiter's writes (another
  // server may not have yet).
  expect(await childrenOf(waiterSide.client, path)).toHaveLength(2);
  await waiter.close();
  expect(await waiting).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
  expect(waiterSide.client.getState()).toBe(State.SYNC_CONNECTED);
  // The waiter's session is still open, so only an explicit delete could have removed its node.
  expect(await childrenOf(waiterSide.client, path)).toHaveLength(1);
  await holder.close();
  expect(lock.signal.aborted).toBe(true);
  expect(holderSide.client.getState()).toBe(State.SYNC_CONNECTED);
  expect(await childrenOf(holderSide.client, path)).toEqual([]);
}, 30_000);
