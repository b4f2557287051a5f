import { CONFORMANCE_SECTIONS, abortedWithin, describeLockProvider, freezeThread, within } from '@fencelock/conformance';
import { type LockProvider, isLockError, monotonicNow } from '@fencelock/core';
import { type EtcdCluster, type TcpProxy, sleep, startEtcdCluster, startTcpProxy, waitFor } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EtcdLockProviderOptions } from '../src/index.js';
import { OwnClientProvider } from './own-client-provider.js';
import { backendWaiters, deleteLock } from './backend-waiters.js';

// One dedicated 3-member cluster for this file: members are killed and paused here. The suite's
// providers reach it through one proxy per member, so that their links can be blackholed; `raw`
// reads what they leave in etcd, directly.
let cluster: EtcdCluster;
let proxies: TcpProxy[] = [];
let raw: Etcd3 | undefined;
beforeAll(async () => {
  cluster = await startEtcdCluster();
  proxies = await Promise.all(cluster.nodes.map((node) => startTcpProxy({ targetPort: node.port })));
  raw = new Etcd3({ hosts: [...cluster.endpoints] });
}, 60_000);
afterAll(async () => {
  raw?.close();
  await Promise.allSettled(proxies.map((proxy) => proxy.close()));
  await cluster?.stop();
});

const SESSION_TTL_MS = 2_000;
const clients = new WeakMap<LockProvider, Etcd3>();


function makeProvider(options?: Omit<EtcdLockProviderOptions, 'client' | 'connection'>, hosts = [...cluster.endpoints]): OwnClientProvider {
  const client = new Etcd3({ hosts });
  const provider = new OwnClientProvider(client, { sessionTtlMs: SESSION_TTL_MS, keyPrefix: 'fencelock-faults/', ...options });
  clients.set(provider, client);
  return provider;
}

async function waitHealthy(): Promise<void> {
  await cluster.leaderIndex({ timeoutMs: 20_000 });
}

const allMembers = (act: (node: EtcdCluster['nodes'][number]) => Promise<void>): Promise<unknown> => Promise.all(cluster.nodes.map(act));

// The suite's fault cases, with every harness power, on the dedicated cluster.
describeLockProvider({
  name: 'etcd (dedicated cluster, all fault powers)',
  createProvider: () => makeProvider({}, proxies.map((proxy) => `http://127.0.0.1:${proxy.port}`)),
  keyPrefix: `faults-suite:`,
  // Elections run on the shared cluster (conformance.test.ts) and over TLS; no case of theirs uses an outage.
  sections: CONFORMANCE_SECTIONS.filter((section) => section !== 'election'),
  harness: {
    backendWaiters: (key) => backendWaiters(raw!, 'fencelock-faults/')(key),
    deleteLock: (key) => deleteLock(raw!, 'fencelock-faults/')(key),
    outages: {
      // A request the members received while stopped is applied on SIGCONT: a release sent during the
      // pause may land late by itself. Kill and blackhole are the cases only core's retry can free.
      pause: async () => {
        await allMembers((node) => node.pause());
        return async () => {
          await allMembers((node) => node.resume());
          await waitHealthy();
        };
      },
      // Every member at once, restarted on its own data dir: leases and keys survive.
      kill: async () => {
        await allMembers((node) => node.kill());
        return async () => {
          await allMembers((node) => node.restart());
          await waitHealthy();
        };
      },
      // The members keep running; only the providers' links carry nothing (the proxies hold the bytes).
      blackhole: async () => {
        for (const proxy of proxies) proxy.setMode('blackhole');
        return async () => {
          for (const proxy of proxies) proxy.setMode('pass');
        };
      },
    },
    pauseBackend: async (ms) => {
      await allMembers((node) => node.pause());
      try {
        await sleep(ms);
      } finally {
        await allMembers((node) => node.resume());
      }
      await waitHealthy();
    },
    restartBackend: async () => {
      await allMembers((node) => node.kill());
      await allMembers((node) => node.restart());
      await waitHealthy();
    },
    crashProvider: async (provider) => {
      clients.get(provider)?.close();
    },
  },
});

describe('etcd faults on a dedicated cluster', () => {
  const open: LockProvider[] = [];
  const provider = (options?: Omit<EtcdLockProviderOptions, 'client' | 'connection'>): OwnClientProvider => {
    const made = makeProvider(options);
    open.push(made);
    return made;
  };
  afterEach(async () => {
    // Whatever a case paused or killed comes back before the next case.
    await Promise.all(cluster.nodes.map((node) => (node.paused ? node.resume() : undefined)));
    await Promise.all(cluster.nodes.map((node) => (node.running ? undefined : node.restart())));
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
    await waitHealthy();
  });

  it('leader killed while a lock is held: the lock survives the election, others still wait, hand-off works after', async () => {
    // The TTL must outlast the worst election here: etcd's election timeout is randomized between 1
    // and 2 s, slower on a loaded machine, and the kill may land just before a keepalive was due.
    const ttlMs = 9_000;
    const [a, b] = [provider({ sessionTtlMs: ttlMs }), provider({ sessionTtlMs: ttlMs })];
    const key = `leader-kill:${randomUUID()}`;
    const lock = await a.acquire(key);
    const leader = await cluster.leaderIndex();
    const node = cluster.nodes[leader]!;
    await node.kill();
    const killedAt = monotonicNow();
    // Waits for a keepalive sent after the kill to be acknowledged: only a new leader can renew it.
    await waitFor(async () => (lock.signal.aborted || lock.validUntil > killedAt + ttlMs ? true : undefined), {
      what: 'a renewal through the new leader',
      timeoutMs: 30_000,
    });
    expect(lock.signal.aborted).toBe(false);
    expect(await cluster.leaderIndex({ timeoutMs: 20_000 })).not.toBe(leader);
    expect(lock.isHeld()).toBe(true);
    expect(await b.tryAcquire(key)).toBeUndefined();
    const waiting = b.acquire(key, { waitMs: 20_000 });
    await sleep(200);
    expect(await lock.release()).toBe(true);
    const next = await within(waiting, 20_000, 'the waiter after the election');
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    await next.release();
    // The member comes back on its own data dir and rejoins.
    await node.restart();
    await waitHealthy();
    const again = await a.acquire(key, { waitMs: 10_000 });
    expect(again.fencingToken! > next.fencingToken!).toBe(true);
    await again.release();
  }, 60_000);

  it('a waiter paused past its lease (F4) is never granted on the dead lease: it re-queues and acquires on a new one', async () => {
    const [a, b] = [provider(), provider()];
    const key = `paused-waiter:${randomUUID()}`;
    const lock = await a.acquire(key);
    const queued = new Promise<void>((resolve) => {
      const off = b.on('contended', () => {
        off();
        resolve();
      });
    });
    const waiting = b.acquire(key, { waitMs: 20_000 });
    await queued;
    // This whole process stops (both clients), past both leases; etcd expires them meanwhile.
    freezeThread(SESSION_TTL_MS + 1_500);
    const next = await within(waiting, 20_000, 'the waiter after the pause');
    expect(lock.signal.aborted).toBe(true);
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    // Its grant stands on a live lease and its own key exists.
    const own = b.ownership(next);
    const inspector = new Etcd3({ hosts: [...cluster.endpoints] });
    try {
      const lease = await inspector.leaseClient.leaseTimeToLive({ ID: own.leaseId });
      expect(Number(lease.TTL)).toBeGreaterThan(0);
      expect(await inspector.get(own.etcdKey).exec()).toMatchObject({ kvs: [expect.objectContaining({ lease: own.leaseId })] });
    } finally {
      inspector.close();
    }
    await next.release();
  }, 60_000);

  it('two of three members paused: nobody acquires, the holder loses by its own deadline, and nothing is left behind', async () => {
    const [a, b, c] = [provider(), provider(), provider()];
    const key = `minority:${randomUUID()}`;
    // b opens its session first, so that its enqueue is what hangs (and may land late).
    await (await b.acquire(`${key}:warm-up`)).release();
    const lock = await a.acquire(key);
    const leader = await cluster.leaderIndex();
    const paused = [leader, (leader + 1) % 3].map((index) => cluster.nodes[index]!);
    await Promise.all(paused.map((node) => node.pause()));
    const attempt = b.acquire(key, { waitMs: 3_000 }).then(
      (handle) => ({ handle }),
      (error: unknown) => ({ error }),
    );
    const reason = await abortedWithin(lock.signal, SESSION_TTL_MS + 2_000, "the holder's loss signal without quorum");
    expect(reason).toMatchObject({ code: 'LOCK_LOST' });
    expect(monotonicNow()).toBeGreaterThanOrEqual(lock.validUntil);
    const outcome = await within(attempt, 20_000, 'the minority acquire to give up');
    expect('handle' in outcome).toBe(false);
    expect(isLockError((outcome as { error: unknown }).error)).toBe(true);
    await Promise.all(paused.map((node) => node.resume()));
    await waitHealthy();
    const next = await c.acquire(key, { waitMs: 20_000 });
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    await next.release();
    // No orphan waiter keys: a's lease was revoked or expired, b's late enqueue (if any) was cancelled.
    const inspector = new Etcd3({ hosts: [...cluster.endpoints] });
    try {
      const left = await waitFor(
        async () => {
          const keys = await inspector.getAll().prefix(`fencelock-faults/${key.replaceAll('/', '%2F')}/`).keys();
          return keys.length === 0 ? keys : undefined;
        },
        { what: 'the lock range to empty', timeoutMs: 20_000, intervalMs: 200 },
      );
      expect(left).toEqual([]);
    } finally {
      inspector.close();
    }
  }, 90_000);
});
