/**
 * Network faults through a TCP proxy of ours in front of one server of the shared ensemble. Creates
 * whose reply never comes back (Curator's "protected" mode): lost (connection reset after the server
 * applied the create) or too late (after we gave up), no contender node leaks. A blackholed
 * connection loses the lock by our own deadline. A release whose delete is lost with the connection
 * still frees the lock once the client is back on its session.
 */
import { randomUUID } from 'node:crypto';
import { abortedWithin, nextEvent, within } from '@fencelock/conformance';
import { monotonicNow } from '@fencelock/core';
import { type TcpProxy, startTcpProxy, topology, waitFor } from '@fencelock/test-infra';
import { type Client, State } from 'node-zookeeper-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { childrenOf, expectNoOrphans, rawClient } from './znodes.js';

const ROOT = '/fencelock-lost-reply';
const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
let proxy: TcpProxy | undefined;
let raw: Client | undefined;

beforeAll(async () => {
  proxy = await startTcpProxy({ targetPort: Number(server.slice(server.lastIndexOf(':') + 1)) });
  raw = await rawClient(server);
});

afterAll(async () => {
  proxy?.setMode('pass');
  // Parents a case could not remove while a lost session's node was still there: they empty within a
  // session timeout (6 s).
  for (const path of parents) {
    await expectNoOrphans(raw!, path, 10_000);
    await removeParent(path);
  }
  raw?.close();
  await proxy?.close();
}, 30_000);

const parents = new Set<string>();

function through(options: { requestTimeoutMs?: number } = {}) {
  if (proxy === undefined) throw new Error('no proxy');
  // The parent stays, so that the only create in flight is the contender's.
  return createZooKeeperLockProvider({
    connectionString: `127.0.0.1:${proxy.port}`,
    sessionTimeoutMs: 6_000,
    root: ROOT,
    removeEmptyParents: false,
    spinDelayMs: 50,
    ...options,
  });
}

async function untilChildren(path: string, predicate: (children: string[]) => boolean, what: string): Promise<string[]> {
  let seen: string[] = [];
  await waitFor(async () => (predicate((seen = await childrenOf(raw!, path))) ? true : undefined), {
    what,
    timeoutMs: 15_000,
    intervalMs: 20,
    describe: () => `children: ${seen.join(', ')}`,
  });
  return seen;
}

/** Removes a lock znode these cases kept (`removeEmptyParents: false`); a non-empty one is retried in afterAll. */
function removeParent(path: string): Promise<void> {
  return new Promise((resolve) =>
    raw!.remove(path, -1, (error) => {
      if (error === null || (error as { code?: number }).code === -101) parents.delete(path);
      else parents.add(path);
      resolve();
    }),
  );
}

it('a create applied by the server whose reply is lost (connection reset) is found again by its prefix, not leaked', async () => {
  const locks = through();
  const key = `lost-reply-${randomUUID()}`;
  const path = `${ROOT}/${encodeKeySegment(key)}`;
  try {
    await (await locks.acquire(key)).release(); // connected, parent in place
    proxy!.setDelayMs(1_000);
    proxy!.setMode('delay');
    const acquiring = locks.acquire(key, { waitMs: 20_000 });
    // The server has applied the create; its reply is still held in the proxy: drop the connection.
    await untilChildren(path, (children) => children.length === 1, 'the create to reach the server');
    proxy!.setMode('reset');
    proxy!.setMode('pass');
    const lock = await acquiring;
    const children = await childrenOf(raw!, path);
    expect(children).toHaveLength(1);
    expect(children[0]).toContain(lock.ownerId);
    expect(await lock.release()).toBe(true);
    expect(await childrenOf(raw!, path)).toEqual([]);
  } finally {
    proxy!.setMode('pass');
    await locks.close();
    await removeParent(path);
  }
}, 60_000);

it('a create answered after the attempt gave up is deleted when its answer arrives', async () => {
  const locks = through({ requestTimeoutMs: 1_000 });
  const key = `late-reply-${randomUUID()}`;
  const path = `${ROOT}/${encodeKeySegment(key)}`;
  try {
    await (await locks.acquire(key)).release();
    proxy!.setDelayMs(1_500);
    proxy!.setMode('delay');
    await expect(locks.acquire(key, { waitMs: 20_000 })).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    // The server applied the create meanwhile; everything our client sends is still 1.5 s late.
    expect(await childrenOf(raw!, path)).toHaveLength(1);
    proxy!.setMode('pass');
    // The create was applied; once its late answer arrives the provider deletes the node.
    await untilChildren(path, (children) => children.length === 0, 'the late node to be deleted');
    const again = await locks.acquire(key, { waitMs: 10_000 });
    expect(await again.release()).toBe(true);
  } finally {
    proxy!.setMode('pass');
    await locks.close();
    await removeParent(path);
  }
}, 60_000);

it('a blackholed connection (the client stays silent): uncertain, then lost by our own deadline; after healing the lock is taken with a larger token', async () => {
  const locks = through();
  const other = createZooKeeperLockProvider({ connectionString: server, sessionTimeoutMs: 6_000, root: ROOT });
  const key = `blackhole-${randomUUID()}`;
  try {
    const lock = await locks.acquire(key);
    const uncertain = nextEvent(locks, 'uncertain', (e) => e.ownerId === lock.ownerId, 10_000);
    proxy!.setMode('blackhole');
    const deadline = lock.validUntil;
    // No event from the client: our read timeout (2/3 of the session) drops the socket.
    await uncertain;
    const reason = await abortedWithin(lock.signal, 6_000 + 1_000, 'the loss by our own deadline');
    // The handle's own validity timer and the session's deadline fire together: either names the loss.
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: expect.stringMatching(/^(session-lost|expired)$/) });
    expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
    proxy!.setMode('pass');
    const next = await other.acquire(key, { waitMs: 20_000 });
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    expect(await lock.release()).toBe(false);
    expect(await next.release()).toBe(true);
    // The provider that lost its session opens a new one.
    const again = await locks.acquire(key, { waitMs: 10_000 });
    expect(await again.release()).toBe(true);
  } finally {
    proxy!.setMode('pass');
    await Promise.all([locks.close(), other.close()]);
    await removeParent(`${ROOT}/${encodeKeySegment(key)}`);
  }
}, 60_000);

it('an acquire aborted while disconnected rejects at once, and its node is deleted when the connection returns', async () => {
  const locks = through();
  const other = createZooKeeperLockProvider({ connectionString: server, sessionTimeoutMs: 6_000, root: ROOT });
  const key = `abort-offline-${randomUUID()}`;
  const path = `${ROOT}/${encodeKeySegment(key)}`;
  try {
    const holder = await other.acquire(key);
    const controller = new AbortController();
    const queued = nextEvent(locks, 'contended', (e) => e.key === key, 10_000);
    const waiting = locks.acquire(key, { waitMs: 30_000, signal: controller.signal }).catch((error: unknown) => error);
    await queued;
    expect(await childrenOf(raw!, path)).toHaveLength(2);
    proxy!.setMode('reset');
    controller.abort();
    // At once, not after a request timeout: nothing waits for the server.
    expect(await within(waiting, 3_000, 'the aborted acquire to reject')).toMatchObject({ code: 'LOCK_ABORTED' });
    proxy!.setMode('pass');
    // The delete was queued in the client and goes out once it has reconnected to its session.
    await untilChildren(path, (children) => children.length === 1, 'the aborted contender to be deleted');
    expect(await holder.release()).toBe(true);
  } finally {
    proxy!.setMode('pass');
    await Promise.all([locks.close(), other.close()]);
    await removeParent(path);
  }
}, 60_000);

it('a release whose delete is lost with the connection: the session survives the reconnect, and another provider acquires the key without the holder being closed', async () => {
  // A client of our own through the proxy, so the test can see when the delete has been sent.
  const client = await rawClient(`127.0.0.1:${proxy!.port}`, { sessionTimeout: 6_000, spinDelay: 50, retries: 0 });
  const locks = createZooKeeperLockProvider({ client, root: ROOT, removeEmptyParents: false });
  const other = createZooKeeperLockProvider({ connectionString: server, sessionTimeoutMs: 6_000, root: ROOT });
  const key = `release-drop-${randomUUID()}`;
  const path = `${ROOT}/${encodeKeySegment(key)}`;
  try {
    const lock = await locks.acquire(key);
    const session = client.getSessionId().toString('hex');
    // The proxy holds what the client sends from now on: the delete leaves the client, never the proxy.
    proxy!.setMode('blackhole');
    const releasing = lock.release().catch((error: unknown) => error);
    await waitFor(async () => (deletesInFlight(client) > 0 ? true : undefined), {
      what: 'the delete to be sent',
      timeoutMs: 5_000,
      intervalMs: 5,
    });
    // The connection drops with the delete unanswered (the client fails it with CONNECTION_LOSS),
    // and comes back at once to the same session.
    proxy!.setMode('reset');
    proxy!.setMode('pass');
    await releasing;
    const next = await other.acquire(key, { waitMs: 10_000 });
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    // Not freed by an expiry: the holder's session is the one it had, connected again.
    expect(client.getState()).toBe(State.SYNC_CONNECTED);
    expect(client.getSessionId().toString('hex')).toBe(session);
    expect(await next.release()).toBe(true);
  } finally {
    proxy!.setMode('pass');
    await Promise.all([locks.close(), other.close()]);
    client.close();
    await removeParent(path);
  }
}, 60_000);

/** Delete requests the client has written to its socket and not yet seen answered. */
function deletesInFlight(client: Client): number {
  const manager = (client as unknown as { connectionManager: { pendingQueue: { request: { header: { type: number } | null } }[] } })
    .connectionManager;
  // 2 is ZooKeeper's opcode for delete.
  return manager.pendingQueue.filter((packet) => packet.request.header?.type === 2).length;
}
