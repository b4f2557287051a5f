import { abortedWithin, within } from '@fencelock/conformance';
import type { LockEventMap, LockHandle } from '@fencelock/core';
import { type EtcdCluster, type TcpProxy, startEtcdCluster, startTcpProxy, topology } from '@fencelock/test-infra';
import { Etcd3, type IWatchResponse, type Namespace } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EtcdLockProvider, createEtcdLockProvider } from '../src/index.js';

// Bounds on how long a notice may take, not timing assertions: a watch tells within a round trip.
const NOTICE_BOUND_MS = 2_000;
const WATCH_BOUND_MS = 5_000;
// A reconnect waits for grpc's and etcd3's backoffs.
const RECONNECT_BOUND_MS = 20_000;
const PREFIX = 'fencelock-deletion/';

/** One watch made on an instrumented client: its key, and each revision etcd confirmed it at. */
interface LoggedWatch {
  readonly key: string;
  readonly confirmedAt: bigint[];
  /** Cancelled by us, and etcd confirmed it. */
  ended: boolean;
  /** Cancelled by etcd (a compaction, a refusal). */
  failed: boolean;
}

/**
 * Logs the watches the provider makes on `client` (the client is the test's own), so a case can wait
 * for a watch to be in place, or cancelled, before it acts.
 */
class WatchLog {
  readonly watches: LoggedWatch[] = [];
  readonly #listeners = new Set<() => void>();

  constructor(client: Etcd3) {
    this.#instrument(client);
  }

  // The holders' watches go through a namespace the provider makes on the client: follow those too.
  #instrument(ns: Namespace): void {
    const namespace = ns.namespace.bind(ns);
    ns.namespace = (prefix: string) => {
      const made = namespace(prefix);
      this.#instrument(made);
      return made;
    };
    const watch = ns.watch.bind(ns);
    ns.watch = () => {
      const builder = watch();
      const make = builder.watcher.bind(builder);
      builder.watcher = () => {
        const watcher = make();
        const logged: LoggedWatch = { key: Buffer.from(watcher.request.key ?? '').toString('utf8'), confirmedAt: [], ended: false, failed: false };
        this.watches.push(logged);
        watcher.on('connected', (response: IWatchResponse) => {
          logged.confirmedAt.push(BigInt(response.header.revision));
          this.#changed();
        });
        watcher.on('end', () => {
          logged.ended = true;
          this.#changed();
        });
        watcher.on('error', () => {
          logged.failed = true;
          this.#changed();
        });
        return watcher;
      };
      return builder;
    };
  }

  of(key: string): LoggedWatch[] {
    return this.watches.filter((watch) => watch.key === key);
  }

  /** Resolves once `condition` holds (checked on every logged change), or rejects after `ms`. */
  until(condition: () => boolean, ms: number, what: string): Promise<void> {
    let stop = (): void => undefined;
    const met = new Promise<void>((resolve) => {
      const check = (): void => {
        if (condition()) resolve();
      };
      this.#listeners.add(check);
      stop = () => this.#listeners.delete(check);
      check();
    });
    return within(met, ms, what).finally(stop);
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/** Providers, each on an instrumented client of its own, closed after each case (provider first). */
function providerFactory(): (hosts: readonly string[], sessionTtlMs?: number) => { provider: EtcdLockProvider; watches: WatchLog } {
  const made: { provider: EtcdLockProvider; client: Etcd3 }[] = [];
  afterEach(async () => {
    const closing = made.splice(0);
    await Promise.allSettled(closing.map(({ provider }) => provider.close()));
    for (const { client } of closing) client.close();
  });
  return (hosts, sessionTtlMs = 10_000) => {
    const client = new Etcd3({ hosts: [...hosts] });
    const watches = new WatchLog(client);
    const provider = createEtcdLockProvider({ client, keyPrefix: PREFIX, sessionTtlMs });
    made.push({ provider, client });
    return { provider, watches };
  };
}

/** Every loss a provider reports. */
function recordLosses(provider: EtcdLockProvider): LockEventMap['lost'][] {
  const losses: LockEventMap['lost'][] = [];
  provider.on('lost', (event) => losses.push(event));
  return losses;
}

async function expectTakenOver(lock: LockHandle, bound: number, what: string): Promise<void> {
  const reason = await abortedWithin(lock.signal, bound, what);
  expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over', key: lock.key });
  expect(lock.isHeld()).toBe(false);
  await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });
}

describe('etcd: a holder watches its own key (shared cluster)', () => {
  const hosts = [...topology().etcdEndpoints];
  const raw = new Etcd3({ hosts });
  afterAll(() => raw.close());
  const make = providerFactory();

  it('a holder whose key is deleted behind its back loses the lock at once, and its release takes nothing from the next holder', async () => {
    const { provider } = make(hosts);
    const { provider: other } = make(hosts);
    const key = randomUUID();
    const lock = await provider.acquire(key);
    await raw.delete().key(provider.ownership(lock).etcdKey).exec();
    await expectTakenOver(lock, NOTICE_BOUND_MS, 'the loss signal after the holder key was deleted');
    const next = await other.acquire(key, { waitMs: 5_000 });
    expect(await lock.release()).toBe(false);
    expect((await other.inspect(key))?.holders.map((holder) => holder.ownerId)).toEqual([next.ownerId]);
    expect(await next.release()).toBe(true);
  });

  it('a holder whose key is overwritten by someone else loses the lock, and leaves the overwritten key alone', async () => {
    const { provider } = make(hosts);
    const key = randomUUID();
    const lock = await provider.acquire(key);
    const { etcdKey } = provider.ownership(lock);
    try {
      await raw.put(etcdKey).value('written by an operator').exec();
      await expectTakenOver(lock, NOTICE_BOUND_MS, 'the loss signal after the holder key was overwritten');
      expect(await lock.release()).toBe(false);
      // Theirs now: still there, and still in the way.
      expect(await raw.get(etcdKey).string()).toBe('written by an operator');
      expect(await provider.tryAcquire(key)).toBeUndefined();
    } finally {
      await raw.delete().key(etcdKey).exec();
    }
  });

  it('our own release is no loss', async () => {
    const { provider, watches } = make(hosts);
    const losses = recordLosses(provider);
    const lock = await provider.acquire(randomUUID());
    const { etcdKey } = provider.ownership(lock);
    await watches.until(() => watches.of(etcdKey).some((w) => w.confirmedAt.length > 0), WATCH_BOUND_MS, 'the holder watch in place');
    expect(await lock.release()).toBe(true);
    // etcd confirms a cancellation after every event it sent the watch: none of them was a loss.
    await watches.until(() => watches.of(etcdKey).every((w) => w.ended), WATCH_BOUND_MS, 'the holder watch cancelled');
    expect(losses).toEqual([]);
    expect(lock.signal.reason).toMatchObject({ code: 'LOCK_NOT_HELD' });
  });

  it('a lease revoked behind the holders\' back is heard at once, as the loss of the lease, by every lock on it', async () => {
    const { provider } = make(hosts);
    const locks = [await provider.acquire(randomUUID()), await provider.acquire(randomUUID())];
    const { leaseId } = provider.ownership(locks[0]!);
    await raw.leaseClient.leaseRevoke({ ID: leaseId });
    for (const lock of locks) {
      const reason = await abortedWithin(lock.signal, NOTICE_BOUND_MS, 'the loss signal after the lease was revoked');
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost' });
    }
    // The next hold is on a new lease.
    const next = await provider.acquire(randomUUID());
    expect(provider.ownership(next).leaseId).not.toBe(leaseId);
    expect(await next.release()).toBe(true);
  });

  it('readers: deleting one reader key ends that reader only', async () => {
    const { provider } = make(hosts);
    const key = randomUUID();
    const first = await provider.acquire(key, { mode: 'shared' });
    const second = await provider.acquire(key, { mode: 'shared' });
    const losses = recordLosses(provider);
    await raw.delete().key(provider.ownership(first).etcdKey).exec();
    await expectTakenOver(first, NOTICE_BOUND_MS, 'the loss signal of the reader whose key was deleted');
    expect(second.isHeld()).toBe(true);
    expect(await second.release()).toBe(true);
    expect(losses.map((loss) => loss.ownerId)).toEqual([first.ownerId]);
  });
});

describe('etcd: the holder watch leaves no window (dedicated 1-member cluster behind a proxy)', () => {
  let cluster: EtcdCluster | undefined;
  let proxy: TcpProxy | undefined;
  let raw: Etcd3 | undefined;
  beforeAll(async () => {
    cluster = await startEtcdCluster({ size: 1 });
    proxy = await startTcpProxy({ targetPort: cluster.nodes[0]!.port });
    raw = new Etcd3({ hosts: [...cluster.endpoints] });
  }, 60_000);
  afterAll(async () => {
    raw?.close();
    await proxy?.close();
    await cluster?.stop();
  });
  afterEach(() => proxy?.setMode('pass'));
  const make = providerFactory();
  // The provider goes through the proxy; `raw` reaches etcd directly.
  const proxied = (): string[] => [`http://127.0.0.1:${proxy!.port}`];

  /** Advances etcd past the history a resumed watch would need, and compacts that history away. */
  async function compactPastNow(): Promise<void> {
    // Two writes: etcd keeps the revision it compacts at, and the watch may resume from the first.
    await raw!.put(`${PREFIX}${randomUUID()}`).value('later').exec();
    const { header } = await raw!.put(`${PREFIX}${randomUUID()}`).value('later').exec();
    await raw!.kv.compact({ revision: header.revision, physical: true });
  }

  it('a delete that lands before etcd confirmed the watch is still heard: the watch starts at the key creation', async () => {
    const { provider, watches } = make(proxied());
    const lock = await provider.acquire(randomUUID());
    const { etcdKey } = provider.ownership(lock);
    // Nothing the provider sends gets through now, its watch included.
    proxy!.setMode('blackhole');
    const deleted = await raw!.delete().key(etcdKey).exec();
    proxy!.setMode('pass');
    await expectTakenOver(lock, NOTICE_BOUND_MS + WATCH_BOUND_MS, 'the loss signal after a delete made before the watch was confirmed');
    // etcd confirmed the holder watch only after the delete had landed.
    expect(watches.of(etcdKey)[0]?.confirmedAt[0]).toBeGreaterThanOrEqual(BigInt(deleted.header.revision));
  });

  it('a key deleted while the watch stream was down is heard on reconnect: the watch resumes where it stopped', async () => {
    const { provider, watches } = make(proxied(), 20_000);
    const lock = await provider.acquire(randomUUID());
    const { etcdKey } = provider.ownership(lock);
    await watches.until(() => watches.of(etcdKey).some((w) => w.confirmedAt.length > 0), WATCH_BOUND_MS, 'the holder watch in place');
    proxy!.setMode('reset');
    const deleted = await raw!.delete().key(etcdKey).exec();
    proxy!.setMode('pass');
    await expectTakenOver(lock, RECONNECT_BOUND_MS, 'the loss signal after reconnecting');
    // The same watch, confirmed again by etcd after the delete: it resumed from before the delete.
    const [resumed] = watches.of(etcdKey);
    expect(watches.of(etcdKey)).toHaveLength(1);
    expect(resumed!.failed).toBe(false);
    expect(resumed!.confirmedAt.at(-1)).toBeGreaterThanOrEqual(BigInt(deleted.header.revision));
  });

  it('a key deleted while the watch stream was down, its history compacted since: read back on reconnect, and lost', async () => {
    const { provider, watches } = make(proxied(), 20_000);
    const lock = await provider.acquire(randomUUID());
    const { etcdKey } = provider.ownership(lock);
    await watches.until(() => watches.of(etcdKey).some((w) => w.confirmedAt.length > 0), WATCH_BOUND_MS, 'the holder watch in place');
    proxy!.setMode('reset');
    await raw!.delete().key(etcdKey).exec();
    await compactPastNow();
    proxy!.setMode('pass');
    await expectTakenOver(lock, RECONNECT_BOUND_MS, 'the loss signal after reconnecting past a compaction');
    // Heard from the read back: the watch itself could not resume.
    expect(watches.of(etcdKey).map((w) => w.failed)).toEqual([true]);
  });

  it('a key kept while the watch stream was down, the history compacted: still held, and watched again', async () => {
    const { provider, watches } = make(proxied(), 20_000);
    const lock = await provider.acquire(randomUUID());
    const { etcdKey } = provider.ownership(lock);
    await watches.until(() => watches.of(etcdKey).some((w) => w.confirmedAt.length > 0), WATCH_BOUND_MS, 'the holder watch in place');
    proxy!.setMode('reset');
    await compactPastNow();
    proxy!.setMode('pass');
    // etcd cancels the resumed watch; once the key is read back, a new watch takes over.
    await watches.until(
      () => watches.of(etcdKey).length === 2 && watches.of(etcdKey)[1]!.confirmedAt.length > 0,
      RECONNECT_BOUND_MS,
      'a new holder watch after the compaction',
    );
    expect(lock.isHeld()).toBe(true);
    expect(watches.of(etcdKey)[0]!.failed).toBe(true);
    await raw!.delete().key(etcdKey).exec();
    await expectTakenOver(lock, NOTICE_BOUND_MS, 'the loss signal from the new watch');
  });
});
