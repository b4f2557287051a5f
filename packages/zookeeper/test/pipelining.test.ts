/**
 * The acquire's first round: the listing is sent right behind the create, in the same write. Counted
 * at the client: an uncontended acquire + release is 3 requests (CREATE2, getChildren, delete) in 2
 * writes. The create's reply carries our node's czxid (the fencing token), and the listing leaves the
 * child watch that tells the holder if its node is deleted behind its back, so neither the token nor
 * the watch costs a request. A contender coming moves the watch to our node with one read, and the
 * token is always the czxid of the holder's own node.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { topology, waitFor } from '@fencelock/test-infra';
import { type Client, CreateMode, type Stat } from 'node-zookeeper-client';
import { afterAll, describe, expect, it } from 'vitest';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { KnownLockZnodes } from '../src/known-lock-znodes.js';
import { rawClient } from './znodes.js';

const ROOT = '/fencelock-pipelining';
const clients: Client[] = [];
afterAll(() => {
  for (const client of clients) client.close();
});

/**
 * A connected client whose queued requests (by opcode) and socket flushes are counted; `deleted`
 * lists the paths of its DELETE requests, in order.
 */
async function countingClient(): Promise<{ client: Client; counts: () => Record<string, number>; deleted: string[] }> {
  const client = await rawClient(topology().zkConnectionString);
  clients.push(client);
  const require = createRequire(import.meta.url);
  const { OP_CODES } = require('node-zookeeper-client/lib/jute/index.js') as { OP_CODES: Record<string, number> };
  // node-zookeeper-client has no CREATE2 of its own (see src/wire-requests.ts).
  const names = new Map([...Object.entries(OP_CODES).map(([name, code]): [number, string] => [code, name]), [15, 'CREATE2']]);
  const manager = (client as unknown as { connectionManager: { queue: (request: unknown, callback: unknown) => void; socket: object } })
    .connectionManager;
  const counts: Record<string, number> = {};
  const deleted: string[] = [];
  const queue = manager.queue.bind(manager);
  manager.queue = (request, callback) => {
    const { header, payload } = request as { header: { type: number }; payload?: { path?: string } };
    // The session keepalive is an exists of "/": counted apart.
    const name = payload?.path === '/' ? 'HEARTBEAT' : (names.get(header.type) ?? 'OTHER');
    counts[name] = (counts[name] ?? 0) + 1;
    if (name === 'DELETE' && payload?.path !== undefined) deleted.push(payload.path);
    queue(request, callback);
  };
  const socket = manager.socket as { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
  for (const method of ['_write', '_writev'] as const) {
    const original = socket[method].bind(socket);
    socket[method] = (...args: unknown[]) => {
      counts['socket writes'] = (counts['socket writes'] ?? 0) + 1;
      original(...args);
    };
  }
  return { client, counts: () => ({ ...counts }), deleted };
}

function delta(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const changed: Record<string, number> = {};
  for (const [name, count] of Object.entries(after)) if (count !== (before[name] ?? 0)) changed[name] = count - (before[name] ?? 0);
  return changed;
}

/** The paths the client holds a watcher on (every kind), as its WatcherManager records them. */
function watchedPaths(client: Client): string[] {
  type Registry = Record<string, { listeners: (event: string) => unknown[] }>;
  const manager = (client as unknown as { connectionManager: { watcherManager: Record<'dataWatchers' | 'existenceWatchers' | 'childWatchers', Registry> } })
    .connectionManager.watcherManager;
  const paths = new Set<string>();
  for (const registry of [manager.dataWatchers, manager.existenceWatchers, manager.childWatchers]) {
    for (const [path, emitter] of Object.entries(registry)) if (emitter.listeners('notification').length > 0) paths.add(path);
  }
  return [...paths];
}

function statOf(client: Client, path: string): Promise<Stat> {
  return new Promise((resolve, reject) => client.exists(path, (error, stat) => (error || !stat ? reject(error ?? new Error(`no ${path}`)) : resolve(stat))));
}

describe('the first round of an acquire', () => {
  it('uncontended, on a lock znode the provider knows: 3 requests in 2 writes per acquire + release', async () => {
    const { client, counts, deleted } = await countingClient();
    const locks = createZooKeeperLockProvider({ client, root: ROOT });
    const key = `pipelining:${randomUUID()}`;
    const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
    try {
      // The first acquire creates the lock znode.
      await (await locks.acquire(key)).release();
      let measured = 0;
      // Five cycles without a keepalive in them (core's keeper sends one a third of the session timeout
      // after the last answer), and without the lock znode's delayed removal, which the next acquire
      // cancels unless the cycle stalled past its delay (a loaded machine can): if every cycle removed
      // it, none would be measured and the test fails.
      for (let cycle = 0; cycle < 50 && measured < 5; cycle += 1) {
        const before = counts();
        const deletes = deleted.length;
        const lock = await locks.acquire(key);
        await lock.release();
        const sent = delta(counts(), before);
        if (sent['HEARTBEAT'] !== undefined || deleted.slice(deletes).includes(lockPath)) continue;
        expect(sent).toEqual({ CREATE2: 1, GET_CHILDREN2: 1, DELETE: 1, 'socket writes': 2 });
        measured += 1;
      }
      expect(measured).toBe(5);
    } finally {
      await locks.close();
    }
  });

  it('a new lock: its znode, our node and the listing go out in one write, answered in order', async () => {
    const { client, counts } = await countingClient();
    // Every cycle uses a new key: a previous key's emptied znode, removed a moment after its release,
    // must not land in the counted window (it did on a loaded machine), so removal is off here.
    const locks = createZooKeeperLockProvider({ client, root: ROOT, removeEmptyParents: false });
    const used: string[] = [];
    try {
      // The root exists, the lock znode does not.
      const first = `pipelining:${randomUUID()}`;
      used.push(`${ROOT}/${encodeKeySegment(first)}`);
      await (await locks.acquire(first)).release();
      let measured = 0;
      // Three cycles without a keepalive in them: a keepalive is a socket write of its own.
      for (let cycle = 0; cycle < 20 && measured < 3; cycle += 1) {
        const key = `pipelining:${randomUUID()}`;
        used.push(`${ROOT}/${encodeKeySegment(key)}`);
        const before = counts();
        const lock = await locks.acquire(key);
        const sent = delta(counts(), before);
        if (sent['HEARTBEAT'] === undefined) {
          expect(sent).toEqual({ CREATE: 1, CREATE2: 1, GET_CHILDREN2: 1, 'socket writes': 1 });
          measured += 1;
        }
        const info = await locks.inspect(key);
        expect(info?.holders[0]?.fencingToken).toBe(lock.fencingToken);
        await lock.release();
      }
      expect(measured).toBe(3);
    } finally {
      await locks.close();
      for (const path of used) await new Promise<void>((resolve) => client.remove(path, -1, () => resolve()));
    }
  });

  it('a lock others created already: the create of its znode fails harmlessly', async () => {
    const { client, counts } = await countingClient();
    const other = createZooKeeperLockProvider({ connectionString: topology().zkConnectionString, root: ROOT, removeEmptyParents: false });
    const locks = createZooKeeperLockProvider({ client, root: ROOT });
    const key = `pipelining:${randomUUID()}`;
    try {
      await (await other.acquire(key)).release();
      await (await other.acquire(key)).release();
      const before = counts();
      const lock = await locks.acquire(key);
      const sent = delta(counts(), before);
      expect(sent).toMatchObject({ CREATE: 1, CREATE2: 1, GET_CHILDREN2: 1 });
      expect(sent['GET_DATA']).toBeUndefined();
      expect((await locks.inspect(key))?.holders[0]?.fencingToken).toBe(lock.fencingToken);
      await lock.release();
      // Known now: the next acquire sends no create of the lock znode.
      const next = counts();
      await (await locks.acquire(key)).release();
      expect(delta(counts(), next)).toMatchObject({ CREATE2: 1 });
      expect(delta(counts(), next)['CREATE']).toBeUndefined();
    } finally {
      await locks.close();
      await other.close();
    }
  });

  it("the token is the czxid of our own node, the one watch is the listing's on the lock znode, and a contender moves it to our node", async () => {
    const { client, counts } = await countingClient();
    const other = await rawClient(topology().zkConnectionString);
    clients.push(other);
    const locks = createZooKeeperLockProvider({ client, root: ROOT, removeEmptyParents: false });
    const key = `pipelining:${randomUUID()}`;
    const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
    try {
      await (await locks.acquire(key)).release();
      // Another client moves the lock's sequence counter (a contender that came and went).
      const foreign = await new Promise<string>((resolve, reject) =>
        other.create(`${lockPath}/x-lock-`, CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) => (error ? reject(error) : resolve(path))),
      );
      await new Promise<void>((resolve, reject) => other.remove(foreign, -1, (error) => (error ? reject(error) : resolve())));

      const before = counts();
      const lock = await locks.acquire(key);
      expect(delta(counts(), before)).toMatchObject({ CREATE2: 1, GET_CHILDREN2: 1 });
      expect(delta(counts(), before)['GET_DATA']).toBeUndefined();
      const children = await new Promise<string[]>((resolve, reject) =>
        other.getChildren(lockPath, (error, list) => (error ? reject(error) : resolve(list))),
      );
      const own = children.find((child) => child.includes(lock.ownerId));
      expect(own).toBeDefined();
      expect((await statOf(other, `${lockPath}/${own}`)).czxid.readBigInt64BE(0)).toBe(lock.fencingToken);
      expect((await locks.inspect(key))?.holders[0]?.fencingToken).toBe(lock.fencingToken);
      expect(watchedPaths(client)).toEqual([lockPath]);

      // A contender comes: the holder reads its own node once, and watches it from then on.
      const reads = counts()['GET_DATA'] ?? 0;
      const waiter = await new Promise<string>((resolve, reject) =>
        other.create(`${lockPath}/y-lock-`, CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) => (error ? reject(error) : resolve(path))),
      );
      await waitFor(async () => (watchedPaths(client).includes(`${lockPath}/${own}`) ? true : undefined), {
        what: "the holder's watch to move to its own node",
        timeoutMs: 5_000,
        intervalMs: 5,
      });
      expect(watchedPaths(client)).toEqual([`${lockPath}/${own}`]);
      expect((counts()['GET_DATA'] ?? 0) - reads).toBe(1);
      expect(lock.isHeld()).toBe(true);
      await new Promise<void>((resolve, reject) => other.remove(waiter, -1, (error) => (error ? reject(error) : resolve())));
      expect(await lock.release()).toBe(true);
    } finally {
      await locks.close();
      await new Promise<void>((resolve) => other.remove(lockPath, -1, () => resolve()));
    }
  });
});

describe('known lock znodes', () => {
  it('remember the lock znodes used, forget on demand, and stay bounded (least recently used dropped first)', () => {
    const known = new KnownLockZnodes();
    expect(known.knows('/l')).toBe(false);
    known.record('/l');
    expect(known.knows('/l')).toBe(true);
    known.forget('/l');
    expect(known.knows('/l')).toBe(false);
    known.record('/kept');
    for (let index = 0; index < 1_023; index += 1) known.record(`/many/${index}`);
    // Used again: the most recent now, so the next one past the bound drops /many/0 instead.
    known.record('/kept');
    known.record('/one-more');
    expect(known.knows('/kept')).toBe(true);
    expect(known.knows('/many/0')).toBe(false);
    expect(known.knows('/many/1')).toBe(true);
    expect(known.knows('/one-more')).toBe(true);
  });
});
