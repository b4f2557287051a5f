/**
 * Counting semaphores shared with Apache Curator's `InterProcessSemaphoreV2` on the same path, both
 * ways, against the shared ensemble: Curator peers run as child processes (see @fencelock/test-infra's
 * zookeeper-lock-peers), each taking one lease of `maxLeases`; ours use the same limit.
 */
import { randomUUID } from 'node:crypto';
import { abortedWithin, isPending, nextEvent, within } from '@fencelock/conformance';
import { type ZooKeeperLockPeer, startCuratorSemaphorePeer, topology } from '@fencelock/test-infra';
import { describe, expect, it } from 'vitest';
import { createZooKeeperLockProvider } from '../src/index.js';
import { SEMAPHORES_SEGMENT } from '../src/semaphore-paths.js';
import { dropConnectionForTesting } from '../src/zookeeper-lock-provider.js';
import { childrenOf, rawClientForFile, untilChildren } from './znodes.js';

// One server for everyone (our providers, the peers, the raw client): reads then see every write in order.
const zkConnectionString = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
const ROOT = '/fencelock-semaphore-interop';
const raw = rawClientForFile(zkConnectionString, `${ROOT}/${SEMAPHORES_SEGMENT}`);

function provider(sessionTimeoutMs = 10_000) {
  return createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT, sessionTimeoutMs });
}

/** The semaphore's path as Curator is given it (the README's mapping: `<root>/#semaphores/<key>`). */
function semaphorePath(key: string): string {
  return `${ROOT}/${SEMAPHORES_SEGMENT}/${key}`;
}

describe("interoperability with Curator's InterProcessSemaphoreV2", () => {
  it('Curator holds a lease: we take the other of 2, and our third waits until Curator returns its lease', async () => {
    const [a, b] = [provider(), provider()];
    const key = `sem-interop-${randomUUID()}`;
    const path = semaphorePath(key);
    let peer: ZooKeeperLockPeer | undefined;
    try {
      peer = await startCuratorSemaphorePeer({ connectionString: zkConnectionString, path, maxLeases: 2 });
      await peer.held;
      const ours = await a.tryAcquireSemaphore(key, { limit: 2, metadata: 'worker a' });
      expect(ours, 'the second of 2 leases beside Curator').toBeDefined();
      // Both share one `leases` znode, named by Curator's protected scheme.
      const leases = await childrenOf(raw(), `${path}/leases`);
      expect(leases).toHaveLength(2);
      for (const lease of leases) expect(lease).toMatch(/^_c_[0-9a-f-]{36}-lease-\d{10}$/);
      expect(leases.some((lease) => lease.startsWith(`_c_${ours!.ownerId}-lease-`))).toBe(true);
      const info = await b.inspectSemaphore(key);
      expect(info?.limit).toBe(2);
      expect(info?.holders).toHaveLength(2);
      const curatorHolder = info?.holders.find((holder) => holder.ownerId !== ours!.ownerId);
      expect(info?.holders.find((holder) => holder.ownerId === ours!.ownerId)?.metadata).toBe('worker a');
      // Curator's lease was created before ours: a smaller czxid.
      expect(curatorHolder!.fencingToken! < ours!.fencingToken!).toBe(true);

      expect(await b.tryAcquireSemaphore(key, { limit: 2 }), 'a third lease of 2').toBeUndefined();
      const queued = nextEvent(b, 'contended', (e) => e.key === key, 10_000);
      const waiting = b.acquireSemaphore(key, { limit: 2, waitMs: 30_000 });
      await queued;
      expect(await isPending(waiting)).toBe(true);
      await peer.release();
      const next = await within(waiting, 30_000, 'our waiter after Curator returned its lease');
      expect(next.fencingToken! > ours!.fencingToken!).toBe(true);
      expect(await ours!.release()).toBe(true);
      expect(await next.release()).toBe(true);
    } finally {
      peer?.kill();
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);

  it('we hold a lease: one of two Curators takes the other of 2, and the second waits until we release', async () => {
    const [a, b] = [provider(), provider()];
    const key = `sem-interop-${randomUUID()}`;
    const path = semaphorePath(key);
    const peers: ZooKeeperLockPeer[] = [];
    try {
      const ours = await a.acquireSemaphore(key, { limit: 2 });
      // Both started at once: whichever reaches the mutex first takes the free lease.
      peers.push(...(await Promise.all([0, 1].map(() => startCuratorSemaphorePeer({ connectionString: zkConnectionString, path, maxLeases: 2 })))));
      await Promise.race(peers.map((peer) => peer.held));
      // The other's lease node is there (it holds the mutex and waits on the leases): 3 nodes, 2 leases.
      await untilChildren(raw(), `${path}/leases`, 3);
      const waiting = peers.filter((peer) => !peer.isHolding);
      expect(waiting).toHaveLength(1);
      // Full, and the waiting Curator holds the mutex: our try gets nothing and leaves nothing.
      expect(await b.tryAcquireSemaphore(key, { limit: 2 })).toBeUndefined();
      const info = await b.inspectSemaphore(key);
      expect(info?.limit).toBe(2);
      expect(info?.holders.map((holder) => holder.ownerId)).toContain(ours.ownerId);
      expect(info?.holders).toHaveLength(2);
      expect(await ours.release()).toBe(true);
      await waiting[0]!.held;
      await Promise.all(peers.map((peer) => peer.release()));
      expect(await b.inspectSemaphore(key)).toBeUndefined();
    } finally {
      for (const peer of peers) peer.kill();
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);

  it("a holder's session expiry frees its lease, both ways: our crashed provider's to Curator, a killed Curator's to us", async () => {
    const a = provider();
    // Short sessions: the server expires a silent holder within ~2 s.
    const crashing = provider(2_000);
    const key = `sem-interop-expiry-${randomUUID()}`;
    const path = semaphorePath(key);
    let curator: ZooKeeperLockPeer | undefined;
    try {
      // In line for the one permit: our crashing holder, then Curator, then ours.
      const abandoned = await crashing.acquireSemaphore(key, { limit: 1 });
      curator = await startCuratorSemaphorePeer({ connectionString: zkConnectionString, path, maxLeases: 1, sessionTimeoutMs: 2_000 });
      await untilChildren(raw(), `${path}/leases`, 2);
      const queued = nextEvent(a, 'contended', (e) => e.key === key, 10_000);
      const waiting = a.acquireSemaphore(key, { limit: 1, waitMs: 30_000 });
      await queued;
      expect(curator.isHolding).toBe(false);
      dropConnectionForTesting(crashing);
      await curator.held;
      expect(await abortedWithin(abandoned.signal, 10_000, 'the crashed holder to hear its loss')).toMatchObject({ code: 'LOCK_LOST', key });
      expect(await isPending(waiting)).toBe(true);
      curator.kill();
      const ours = await within(waiting, 30_000, "our waiter after the killed Curator peer's session expired");
      expect(ours.fencingToken! > abandoned.fencingToken!).toBe(true);
      expect(await ours.release()).toBe(true);
    } finally {
      curator?.kill();
      await Promise.all([a.close(), crashing.close()]);
    }
  }, 60_000);
});
