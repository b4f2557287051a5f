import type { LockProvider } from '@fencelock/core';
import { nextEvent, within } from '@fencelock/conformance';
import { redisCommand, startTcpProxy, topology, waitFor } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';
import { clusterNode, crashProvider } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();

// Polling so slow (a minute between attempts) that only a release notification can wake a waiter in time.
const NO_POLLING = { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 1 };

const targets: [string, (channel: string) => RedisLockProviderOptions, number][] = [
  ['single', (channel) => ({ connection: redisUrl, channel, retry: NO_POLLING }), Number(new URL(redisUrl).port)],
  [
    'cluster',
    (channel) => ({ clusterNodes: redisClusterUrls.map(clusterNode), channel, retry: NO_POLLING }),
    clusterNode(redisClusterUrls[0] ?? '').port,
  ],
];

describe.each(targets)('release notifications (%s)', (_label, options, port) => {
  const open: LockProvider[] = [];
  const provider = (channel: string): LockProvider => {
    const made = createRedisLockProvider(options(channel));
    open.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
  });

  it('wakes a waiter at the release, not at its next poll', async () => {
    const channel = `fencelock:test:${randomUUID()}`;
    const [a, b] = [provider(channel), provider(channel)];
    const key = `notify:${randomUUID()}`;
    const holder = await a.acquire(key);
    const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
    const waiting = b.acquire(key, { waitMs: 30_000 });
    await contended;
    await holder.release();
    const lock = await within(waiting, 10_000, 'the notified waiter');
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  }, 30_000);

  it('retries right when the lock of a crashed holder expires, not at its next poll', async () => {
    const channel = `fencelock:test:${randomUUID()}`;
    const [a, b] = [provider(channel), provider(channel)];
    const key = `notify-expiry:${randomUUID()}`;
    const holder = await a.acquire(key, { ttlMs: 1_000 });
    const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
    const waiting = b.acquire(key, { waitMs: 30_000 });
    await contended;
    // Nobody releases (or publishes): only the holder's TTL, reported by the failed attempt, can wake b in time.
    await crashProvider(a);
    const lock = await within(waiting, 10_000, 'the waiter to retry at the expiry');
    expect(lock.acquiredAt).toBeGreaterThanOrEqual(holder.validUntil);
    expect(lock.fencingToken! > holder.fencingToken!).toBe(true);
    await lock.release();
  }, 30_000);

  it('serves many waiters on many keys with one subscriber connection per provider', async () => {
    const channel = `fencelock:test:${randomUUID()}`;
    const [a, b] = [provider(channel), provider(channel)];
    const keys = Array.from({ length: 20 }, () => `notify-many:${randomUUID()}`);
    // tryAcquire never waits, so the holder's provider never subscribes: every subscriber is b's.
    const holders = await Promise.all(keys.map(async (key) => (await a.tryAcquire(key))!));
    const contended = keys.map((key) => nextEvent(b, 'contended', (e) => e.key === key, 5_000));
    const waiting = keys.map((key) => b.acquire(key, { waitMs: 30_000 }));
    // Settled either way, so a failed assertion below does not leave 20 rejections unhandled at close.
    const granted = Promise.allSettled(waiting);
    await Promise.all(contended);
    // PUBSUB NUMSUB counts subscribers on the node asked; on a cluster the subscriber may sit on any node.
    // The subscription is made by the first wait (after the first attempt), so wait for it to appear.
    const subscribers = async (): Promise<number> => {
      const ports = _label === 'cluster' ? redisClusterUrls.map((url) => clusterNode(url).port) : [port];
      const counts = await Promise.all(
        ports.map(async (p) => Number(((await redisCommand(p, ['PUBSUB', 'NUMSUB', channel])) as [string, number])[1])),
      );
      return counts.reduce((sum, n) => sum + n, 0);
    };
    const count = await waitFor(async () => {
      const n = await subscribers();
      return n > 0 ? n : undefined;
    }, { timeoutMs: 5_000, what: 'the subscriber connection' });
    expect(count).toBe(1);
    await Promise.all(holders.map((holder) => holder.release()));
    const locks = await within(Promise.all(waiting), 10_000, 'every notified waiter');
    await Promise.all(locks.map((lock) => lock.release()));
    expect(await subscribers()).toBe(1);
    await granted;
  }, 30_000);
});

describe('release notifications across a reconnect (single)', () => {
  const port = Number(new URL(redisUrl).port);

  it('a waiter tries again when its subscription comes back, so a release announced while it was down is not waited out', async () => {
    const proxy = await startTcpProxy({ targetPort: port });
    const channel = `fencelock:test:${randomUUID()}`;
    const a = createRedisLockProvider({ connection: redisUrl, channel, retry: NO_POLLING });
    // b reaches the server through the proxy, whose reset drops both its connections.
    const b = createRedisLockProvider({ connection: `redis://127.0.0.1:${proxy.port}`, channel, retry: NO_POLLING });
    try {
      const key = `notify-reconnect:${randomUUID()}`;
      // A minute of TTL: without a new attempt after the reconnect, b sleeps until the holder's expiry.
      const holder = await a.acquire(key, { ttlMs: 60_000 });
      const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
      const waiting = b.acquire(key, { waitMs: 50_000 });
      await contended;
      await waitFor(async () => (Number(((await redisCommand(port, ['PUBSUB', 'NUMSUB', channel])) as [string, number])[1]) > 0 ? true : undefined), {
        timeoutMs: 5_000,
        what: "b's subscription",
      });
      proxy.setMode('reset');
      // The release hands the lock to b, the head of the line, and announces it: b hears nothing.
      expect(await holder.release()).toBe(true);
      proxy.setMode('pass');
      const lock = await within(waiting, 10_000, 'the waiter to try again once its subscription is back');
      expect(lock.isHeld()).toBe(true);
      expect(lock.fencingToken! > holder.fencingToken!).toBe(true);
      await lock.release();
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
      await proxy.close();
    }
  }, 30_000);
});
