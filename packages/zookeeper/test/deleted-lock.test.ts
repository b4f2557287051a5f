/**
 * A holder's znode deleted behind its back (an operator's `delete`, another tool): the holder hears
 * it from its watch (the child watch its acquire's listing left on the lock znode, or, once a
 * contender came, the watch on its own node) and its signal aborts with LOCK_LOST (`taken-over`),
 * while the lock is free for anyone at once. Our own release is not a loss. A write to the node
 * re-arms the watch; across a reconnection within the session the client library restores it, and a
 * delete made while the client was away is reported once it is back. Every wait is bounded; nothing
 * sleeps.
 */
import { randomUUID } from 'node:crypto';
import { abortedWithin, nextEvent } from '@fencelock/conformance';
import type { LockError } from '@fencelock/core';
import { type TcpProxy, startTcpProxy, topology, waitFor } from '@fencelock/test-infra';
import { type Client, CreateMode } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { deleteHolders, rawClient } from './znodes.js';

const ROOT = '/fencelock-deleted';
// One server for the proxied cases; the delete is made straight to it, not through the proxy.
const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
// A bound on the notice, far above the few ms it takes: not a timing assertion.
const NOTICE_BOUND_MS = 2_000;
let raw: Client | undefined;
let proxy: TcpProxy | undefined;
const clients: Client[] = [];
const providers: ZooKeeperLockProvider[] = [];

beforeAll(async () => {
  raw = await rawClient(server);
  proxy = await startTcpProxy({ targetPort: Number(server.slice(server.lastIndexOf(':') + 1)) });
});

afterAll(async () => {
  proxy?.setMode('pass');
  await Promise.allSettled(providers.map((provider) => provider.close()));
  for (const client of [...clients, raw]) client?.close();
  await proxy?.close();
}, 30_000);

function operator(): Client {
  if (raw === undefined) throw new Error('no raw client');
  return raw;
}

function provider(options: { client?: Client; connectionString?: string } = {}): ZooKeeperLockProvider {
  const made =
    options.client === undefined
      ? createZooKeeperLockProvider({ connectionString: options.connectionString ?? topology().zkConnectionString, sessionTimeoutMs: 6_000, root: ROOT, spinDelayMs: 50 })
      : createZooKeeperLockProvider({ client: options.client, root: ROOT });
  providers.push(made);
  return made;
}

function nodePathOf(key: string, ownerId: string, children: readonly string[]): string {
  const name = children.find((child) => child.includes(ownerId));
  if (name === undefined) throw new Error(`no node of ${ownerId} among ${children.join(', ')}`);
  return `${ROOT}/${encodeKeySegment(key)}/${name}`;
}

function childrenOf(client: Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) => client.getChildren(path, (error, list) => (error ? reject(error) : resolve(list))));
}

interface Registry {
  readonly listeners: (event: string) => unknown[];
}

type WatcherKind = 'dataWatchers' | 'childWatchers';

/** Whether the client holds a watcher of `kind` on `path` (its WatcherManager; what SetWatches restores). */
function watches(client: Client, kind: WatcherKind, path: string): boolean {
  const manager = (client as unknown as { connectionManager: { watcherManager: Record<WatcherKind, Record<string, Registry>> } }).connectionManager
    .watcherManager;
  return (manager[kind][path]?.listeners('notification').length ?? 0) > 0;
}

/** A foreign contender comes and goes on `key`'s lock znode; resolves once `client`'s watch is on `node`. */
async function contenderComesAndGoes(client: Client, key: string, node: string): Promise<void> {
  const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
  const contender = await new Promise<string>((resolve, reject) =>
    operator().create(`${lockPath}/x-lock-`, CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) => (error ? reject(error) : resolve(path))),
  );
  await waitFor(async () => (watches(client, 'dataWatchers', node) ? true : undefined), {
    what: 'the watch to move to the held node',
    timeoutMs: 5_000,
    intervalMs: 5,
  });
  await new Promise<void>((resolve, reject) => operator().remove(contender, -1, (error) => (error ? reject(error) : resolve())));
}

/** Collects the provider's `lost` events. */
function losses(locks: ZooKeeperLockProvider): { readonly errors: LockError[]; stop: () => void } {
  const errors: LockError[] = [];
  const stop = locks.on('lost', (event) => errors.push(event.error));
  return { errors, stop };
}

describe('a holder whose znode is deleted behind its back', () => {
  const cases = [
    { path: 'a fresh key', known: false, contended: false },
    { path: 'a key this provider held before', known: true, contended: false },
    { path: 'a holder a contender came to (its watch on its own node)', known: true, contended: true },
  ];
  for (const { path, known, contended } of cases) {
    it(`${path}: the signal aborts with LOCK_LOST (taken-over), and the key is free for others`, async () => {
      const client = await rawClient(server);
      clients.push(client);
      const locks = provider({ client });
      const other = provider();
      const key = `deleted:${randomUUID()}`;
      if (known) await (await locks.acquire(key)).release();
      // Other held locks of the same session hear nothing.
      const bystanders = await Promise.all([1, 2, 3].map((index) => locks.acquire(`${key}:bystander:${index}`)));
      const lock = await locks.acquire(key);
      if (contended) await contenderComesAndGoes(client, key, nodePathOf(key, lock.ownerId, await childrenOf(client, `${ROOT}/${encodeKeySegment(key)}`)));
      const lost = nextEvent(locks, 'lost', (event) => event.ownerId === lock.ownerId, NOTICE_BOUND_MS);
      // Awaited below; a failure before that is reported by the assertion that failed.
      lost.catch(() => undefined);

      await deleteHolders(operator(), ROOT, key);
      const reason = await abortedWithin(lock.signal, NOTICE_BOUND_MS, 'the loss signal after the holder node was deleted');
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over', key });
      expect((await lost).error).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
      expect(lock.isHeld()).toBe(false);
      await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });

      const next = await other.acquire(key, { waitMs: 5_000 });
      expect(next.fencingToken! > lock.fencingToken!).toBe(true);
      // The old holder's release takes nothing from the new one.
      expect(await lock.release()).toBe(false);
      expect((await other.inspect(key))?.holders.map((holder) => holder.ownerId)).toEqual([next.ownerId]);
      expect(bystanders.every((bystander) => bystander.isHeld() && !bystander.signal.aborted)).toBe(true);
      expect(await next.release()).toBe(true);
      for (const bystander of bystanders) expect(await bystander.release()).toBe(true);
    });
  }

  it('our own release is not a loss, and leaves no watcher behind in the client', async () => {
    const client = await rawClient(server);
    clients.push(client);
    const locks = provider({ client });
    const { errors, stop } = losses(locks);
    const key = `released:${randomUUID()}`;
    try {
      const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
      // Even cycles are held on the listing's watch (on the lock znode); odd ones, after a contender
      // came and went, on the held node's own.
      for (let cycle = 0; cycle < 6; cycle += 1) {
        const lock = await locks.acquire(key);
        const node = nodePathOf(key, lock.ownerId, await childrenOf(client, lockPath));
        if (cycle % 2 === 1) await contenderComesAndGoes(client, key, node);
        const [kind, path] = cycle % 2 === 0 ? (['childWatchers', lockPath] as const) : (['dataWatchers', node] as const);
        expect(watches(client, kind, path)).toBe(true);
        expect(await lock.release()).toBe(true);
        // The server sends the watch notification before the delete's reply, on the same connection:
        // by now the client has handled it, and consumed its watcher.
        expect(watches(client, 'childWatchers', lockPath)).toBe(false);
        expect(watches(client, 'dataWatchers', node)).toBe(false);
        expect(lock.signal.aborted && (lock.signal.reason as { code?: string } | undefined)?.code === 'LOCK_LOST').toBe(false);
      }
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });

  it('someone writing to the held node does not lose the lock: the watch is re-armed and still hears a delete', async () => {
    const client = await rawClient(server);
    clients.push(client);
    const locks = provider({ client });
    const { errors, stop } = losses(locks);
    const key = `written:${randomUUID()}`;
    try {
      const lock = await locks.acquire(key);
      const node = nodePathOf(key, lock.ownerId, await childrenOf(client, `${ROOT}/${encodeKeySegment(key)}`));
      await contenderComesAndGoes(client, key, node);
      await new Promise<void>((resolve, reject) => operator().setData(node, Buffer.from('scribble'), -1, (error) => (error ? reject(error) : resolve())));
      // NodeDataChanged consumed the watcher; the re-arming read registers it again.
      await waitFor(async () => (watches(client, 'dataWatchers', node) ? true : undefined), {
        what: 'the watch on the held node to be re-armed',
        timeoutMs: 5_000,
        intervalMs: 5,
      });
      expect(lock.isHeld()).toBe(true);
      expect(errors).toEqual([]);
      await deleteHolders(operator(), ROOT, key);
      const reason = await abortedWithin(lock.signal, NOTICE_BOUND_MS, 'the loss signal after the re-armed watch');
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
    } finally {
      stop();
    }
  });
});

describe('across a reconnection within the session', () => {
  function through(): ZooKeeperLockProvider {
    if (proxy === undefined) throw new Error('no proxy');
    return provider({ connectionString: `127.0.0.1:${proxy.port}` });
  }

  it('the watch is restored with the connection: a later delete is still heard', async () => {
    const locks = through();
    const key = `reconnected:${randomUUID()}`;
    try {
      const lock = await locks.acquire(key);
      const uncertain = nextEvent(locks, 'uncertain', (event) => event.ownerId === lock.ownerId, 10_000);
      proxy!.setMode('reset');
      await uncertain;
      const recovered = nextEvent(locks, 'recovered', (event) => event.ownerId === lock.ownerId, 10_000);
      proxy!.setMode('pass');
      await recovered;
      expect(lock.isHeld()).toBe(true);
      await deleteHolders(operator(), ROOT, key);
      const reason = await abortedWithin(lock.signal, NOTICE_BOUND_MS, 'the loss signal after the reconnection');
      // Not the session: it survived the drop.
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
    } finally {
      proxy!.setMode('pass');
    }
  });

  it('a delete made while the client was disconnected is reported once it reconnects', async () => {
    const locks = through();
    const key = `deleted-offline:${randomUUID()}`;
    try {
      const lock = await locks.acquire(key);
      const uncertain = nextEvent(locks, 'uncertain', (event) => event.ownerId === lock.ownerId, 10_000);
      proxy!.setMode('reset');
      await uncertain;
      await deleteHolders(operator(), ROOT, key);
      expect(lock.signal.aborted).toBe(false);
      proxy!.setMode('pass');
      // The reconnection (spinDelayMs 50) plus the notice.
      const reason = await abortedWithin(lock.signal, 10_000, 'the loss signal once the client is back');
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
      expect(await lock.release()).toBe(false);
    } finally {
      proxy!.setMode('pass');
    }
  });
});
