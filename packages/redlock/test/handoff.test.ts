/**
 * Hand-off on the shared masters: the line of waiters (a released lock goes to a client that was
 * already waiting, not to the releaser coming straight back), release announcements (a waiter is
 * woken by the release, not by its next poll) and leaving the line when a waiter gives up.
 */
import { nextEvent, within } from '@fencelock/conformance';
import { type LockProvider, isLockError } from '@fencelock/core';
import { redisCommand, startTcpProxy, waitFor } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { IoredisLockClient, LocalWaiters } from '@fencelock/redis-shared';
import { RELEASE_CHANNEL } from '../src/lock-keys.js';
import { MasterNode } from '../src/master-node.js';
import { ReleaseListener } from '../src/release-listener.js';
import { decodeLockValue } from '../src/lock-value.js';
import { parseAnnouncement } from '../src/redlock-scripts.js';
import { sharedMasters } from './helpers.js';

const { redlockUrls, ports, open } = sharedMasters();

/**
 * What a waiter that crashed while waiting leaves on every master: its entry in the key's line of
 * waiters, live for a minute (scored by the master's time, as the acquire script scores it).
 */
async function registerCrashedWaiter(key: string): Promise<void> {
  const value = `crashed-${randomUUID()}`;
  for (const port of ports) {
    const [seconds, micros] = (await redisCommand(port, ['TIME'])) as [string, string];
    const until = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + 60_000;
    await redisCommand(port, ['ZADD', `{w}fencelock:redlock-waiters:${key}`, String(until), value]);
    await redisCommand(port, ['PEXPIRE', `{w}fencelock:redlock-waiters:${key}`, '60000']);
  }
}

// Polls so rare that only a release announcement can wake the waiter within the test's bounds.
const NO_POLLING = { initialDelayMs: 60_000, maxDelayMs: 60_000 };

/**
 * A provider that waits with {@link NO_POLLING} and whose subscriptions are open. A first wait opens
 * them, and the waiter tries again once one is confirmed (refreshing its place in line): get that
 * behind us on another key, so that afterwards only an announcement wakes it and its place in line
 * is that of its first attempt.
 */
async function subscribedWaiter(holder: LockProvider): Promise<LockProvider> {
  const waiter = open({ retry: NO_POLLING });
  const warmKey = `announce-warm:${randomUUID()}`;
  const warm = await holder.acquire(warmKey, { ttlMs: 10_000 });
  const warmWaiting = waiter.acquire(warmKey, { ttlMs: 10_000, waitMs: 50_000 });
  await nextEvent(waiter, 'contended', (e) => e.key === warmKey, 5_000);
  await warm.release();
  await (await within(warmWaiting, 10_000, 'the first grant')).release();
  return waiter;
}

describe('hand-off to a waiting client', () => {
  it('a released lock goes to the client already waiting, not to the releaser asking again at once', async () => {
    const releaser = open();
    const waiter = open();
    const key = `line:${randomUUID()}`;
    const held = await releaser.acquire(key, { ttlMs: 10_000 });
    const waiting = waiter.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
    await nextEvent(waiter, 'contended', (e) => e.key === key, 5_000);
    expect(await held.release()).toBe(true);
    // The key is free on every master, but reserved for the waiter for a moment: the releaser's
    // waiting acquire is turned away and joins the line.
    const comeback = releaser.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
    const next = await within(waiting, 10_000, "the waiter's grant");
    expect(await next.release()).toBe(true);
    const again = await within(comeback, 10_000, 'the releaser, after the waiter');
    expect(await again.release()).toBe(true);
  });

  it('a free key goes to a try-once attempt even while a crashed waiter is registered', async () => {
    const provider = open();
    const key = `crashed-waiter:${randomUUID()}`;
    await registerCrashedWaiter(key);
    const lock = await provider.tryAcquire(key, { ttlMs: 10_000 });
    expect(lock).toBeDefined();
    expect(await lock?.release()).toBe(true);
  });

  it('a waiting acquire of a free key is granted at its first attempt, whoever is registered', async () => {
    const provider = open();
    const key = `crashed-waiter-wait:${randomUUID()}`;
    await registerCrashedWaiter(key);
    const contended: string[] = [];
    const off = provider.on('contended', (e) => contended.push(e.key));
    try {
      const lock = await provider.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
      expect(contended).toEqual([]);
      expect(await lock.release()).toBe(true);
    } finally {
      off();
    }
  });

  it('right after a release that reserved the lock for a crashed waiter, a try-once attempt still gets it', async () => {
    const [holder, newcomer] = [open(), open()];
    const key = `crashed-waiter-release:${randomUUID()}`;
    const held = await holder.acquire(key, { ttlMs: 10_000 });
    await registerCrashedWaiter(key);
    expect(await held.release()).toBe(true);
    const lock = await newcomer.tryAcquire(key, { ttlMs: 10_000 });
    expect(lock).toBeDefined();
    expect(await lock?.release()).toBe(true);
  });

  it("handoff 'barging': a waiting attempt takes a free key reserved for the clients in line at once, where 'waiters-first' is turned away first", async () => {
    const key = `barging:${randomUUID()}`;
    const reserved = `{w}fencelock:redlock-handoff:${key}`;
    // What a release leaves on every master while clients wait: the free key reserved for them.
    const reserve = async (): Promise<void> => {
      for (const port of ports) await redisCommand(port, ['SET', reserved, '1', 'PX', '60000']);
    };
    await registerCrashedWaiter(key);
    await reserve();
    const fair = open();
    const fairContended = nextEvent(fair, 'contended', (e) => e.key === key, 5_000);
    const fairLock = await fair.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
    await fairContended;
    expect(await fairLock.release()).toBe(true);
    await reserve();
    const barging = open({ handoff: 'barging' });
    const contended: string[] = [];
    const off = barging.on('contended', (e) => contended.push(e.key));
    try {
      const lock = await barging.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
      expect(contended).toEqual([]);
      // Left to lapse by itself on the masters that granted: a barging attempt does not end it.
      expect(await redisCommand(ports[0]!, ['EXISTS', reserved])).toBe(1);
      expect(await lock.release()).toBe(true);
    } finally {
      off();
    }
  });

  it('refuses an unknown handoff policy before connecting', () => {
    expect(() => open({ handoff: 'fair' as never })).toThrow(/options\.handoff must be 'waiters-first' or 'barging', got "fair"/);
  });

  it('right after a release to registered waiters, a waiting newcomer is turned away once, then joins the line and gets the lock', async () => {
    const [holder, newcomer] = [open(), open()];
    const key = `reserved:${randomUUID()}`;
    const held = await holder.acquire(key, { ttlMs: 10_000 });
    await registerCrashedWaiter(key);
    expect(await held.release()).toBe(true);
    const contended = nextEvent(newcomer, 'contended', (e) => e.key === key, 5_000);
    const lock = await newcomer.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
    await contended;
    expect(await lock.release()).toBe(true);
  });

  it('a waiter is woken by the release announcement, not by its next poll', async () => {
    const holder = open();
    const waiter = await subscribedWaiter(holder);
    const key = `announce:${randomUUID()}`;
    const held = await holder.acquire(key, { ttlMs: 10_000 });
    const waiting = waiter.acquire(key, { ttlMs: 10_000, waitMs: 50_000 });
    await nextEvent(waiter, 'contended', (e) => e.key === key, 5_000);
    await held.release();
    // The waiter's next poll is 30–60 s away: only the announcement can wake it within 10 s.
    const next = await within(waiting, 10_000, 'the waiter woken by the release');
    expect(next.key).toBe(key);
    await next.release();
  });

  it('the announcement names the head of the line: the waiter that registered first is woken and gets the lock', async () => {
    const listener = new Redis(`redis://127.0.0.1:${ports[0]}`);
    const holder = open();
    const [first, second] = [await subscribedWaiter(holder), await subscribedWaiter(holder)];
    try {
      const messages: string[] = [];
      const channels: string[] = [];
      listener.on('pmessage', (_pattern: string, channel: string, message: string) => {
        messages.push(message);
        channels.push(channel);
      });
      // The shared channel and every provider's own one (`<channel>:<line tag>`).
      await listener.psubscribe(RELEASE_CHANNEL, `${RELEASE_CHANNEL}:*`);
      const key = `head:${randomUUID()}`;
      const held = await holder.acquire(key, { ttlMs: 10_000 });
      // Metadata makes the registered value longer in bytes than in characters.
      const firstWaiting = first.acquire(key, { ttlMs: 10_000, waitMs: 50_000, metadata: 'première 🔒' });
      await nextEvent(first, 'contended', (e) => e.key === key, 5_000);
      const secondWaiting = second.acquire(key, { ttlMs: 10_000, waitMs: 50_000 });
      await nextEvent(second, 'contended', (e) => e.key === key, 5_000);
      await held.release();
      const next = await within(firstWaiting, 10_000, 'the head of the line, woken by the release');
      // The waiter is woken once a majority of masters announced, which may be before this listener
      // of one master has heard that master's copy.
      await vi.waitFor(() => expect(messages.some((m) => m.endsWith(key))).toBe(true), { timeout: 5_000, interval: 5 });
      const firstIndex = messages.findIndex((m) => m.endsWith(key));
      const announcement = parseAnnouncement(messages[firstIndex] ?? '');
      expect(announcement && decodeLockValue(announcement.waiter)).toEqual({ ownerId: next.ownerId, metadata: 'première 🔒' });
      await next.release();
      const last = await within(secondWaiting, 10_000, 'the next in line');
      await vi.waitFor(() => expect(messages.filter((m) => m.endsWith(key)).length).toBeGreaterThan(1), { timeout: 5_000, interval: 10 });
      const secondIndex = messages.findIndex((m, index) => index > firstIndex && m.endsWith(key) && parseAnnouncement(m)?.releaseId !== announcement?.releaseId);
      expect(decodeLockValue(parseAnnouncement(messages[secondIndex] ?? '')?.waiter ?? '').ownerId).toBe(last.ownerId);
      // Each head is told on its own provider's channel, so a release wakes one process only.
      expect(channels[firstIndex]?.startsWith(`${RELEASE_CHANNEL}:`)).toBe(true);
      expect(channels[secondIndex]?.startsWith(`${RELEASE_CHANNEL}:`)).toBe(true);
      expect(channels[firstIndex]).not.toBe(channels[secondIndex]);
      await last.release();
    } finally {
      listener.disconnect();
    }
  });

  it('a waiter that gives up leaves the line, so a free lock is not held back for it', async () => {
    const holder = open();
    const quitter = open();
    const key = `quit:${randomUUID()}`;
    const held = await holder.acquire(key, { ttlMs: 10_000 });
    const error = await quitter.acquire(key, { ttlMs: 10_000, waitMs: 200 }).catch((e: unknown) => e);
    expect(isLockError(error, 'LOCK_TIMEOUT')).toBe(true);
    // Right after the call settled (cleanup does not hold the call up).
    for (const port of ports) {
      await vi.waitFor(async () => expect(await redisCommand(port, ['ZCARD', `{w}fencelock:redlock-waiters:${key}`])).toBe(0), { timeout: 5_000, interval: 10 });
    }
    await held.release();
    const again = await holder.tryAcquire(key, { ttlMs: 10_000 });
    expect(again).toBeDefined();
    await again?.release();
  });

  it('a lock key shaped like a side key is refused before any request', async () => {
    const provider = open();
    const error = await provider.tryAcquire(`{w}fencelock:redlock-waiters:${randomUUID()}`).catch((e: unknown) => e);
    expect(isLockError(error, 'LOCK_INVALID_ARGUMENT')).toBe(true);
  });
});

describe('release announcements', () => {
  it('wake the head of the line once a majority of masters announced the release, not at the first copy', async () => {
    const masters = redlockUrls.map((url) => new MasterNode(url, new IoredisLockClient(new Redis(url)), true));
    const listener = new ReleaseListener(masters);
    const woken: string[] = [];
    const wakeOne = vi.spyOn(LocalWaiters.prototype, 'wakeOne').mockImplementation((lockKey: string) => {
      woken.push(lockKey);
    });
    const run = randomUUID();
    const announce = (release: string, key: string): string => `${release.length}:${release}1:v${key}`;
    /** Three copies of a fresh release from `port`'s master, until one is counted (its subscription is up). */
    const sync = async (port: number): Promise<void> => {
      await vi.waitFor(
        async () => {
          const key = `sync:${randomUUID()}`;
          const release = randomUUID();
          for (let copy = 0; copy < 3; copy += 1) await redisCommand(port, ['PUBLISH', RELEASE_CHANNEL, announce(release, key)]);
          await vi.waitFor(() => expect(woken).toContain(key), { timeout: 500, interval: 5 });
        },
        { timeout: 10_000, interval: 10 },
      );
      woken.length = 0;
    };
    try {
      const waiting = listener.wakeup(`k:${run}`, 'v');
      // The first wait opens the subscriptions and ends once one is confirmed.
      await waiting.wait(10_000, new AbortController().signal);
      await sync(ports[0]!);
      await sync(ports[1]!);
      // Two copies of a release: a minority of masters has deleted the key, nobody is woken.
      for (let copy = 0; copy < 2; copy += 1) await redisCommand(ports[0]!, ['PUBLISH', RELEASE_CHANNEL, announce(`r:${run}`, `k:${run}`)]);
      await sync(ports[0]!);
      expect(woken).toEqual([]);
      // The third copy, from another master, makes a majority.
      await redisCommand(ports[1]!, ['PUBLISH', RELEASE_CHANNEL, announce(`r:${run}`, `k:${run}`)]);
      await vi.waitFor(() => expect(woken).toEqual([`k:${run}`]), { timeout: 10_000, interval: 5 });
      waiting.close();
    } finally {
      wakeOne.mockRestore();
      listener.close();
      for (const master of masters) master.close();
    }
  });

  it('lost while the connections were down: every waiter tries again once a master is subscribed and reachable again', async () => {
    // Every master behind a proxy, whose reset drops the listener's subscriber and request connections.
    const proxies = await Promise.all(ports.map((port) => startTcpProxy({ targetPort: port })));
    const masters = proxies.map((proxy) => {
      const url = `redis://127.0.0.1:${proxy.port}`;
      return new MasterNode(url, new IoredisLockClient(new Redis(url)), true);
    });
    const listener = new ReleaseListener(masters);
    const ownChannel = `${RELEASE_CHANNEL}:${listener.lineTag}`;
    const subscribedEverywhere = async (): Promise<void> => {
      await waitFor(
        async () => {
          const counts = await Promise.all(ports.map(async (port) => Number(((await redisCommand(port, ['PUBSUB', 'NUMSUB', ownChannel])) as [string, number])[1])));
          return counts.every((count) => count === 1) ? true : undefined;
        },
        { timeoutMs: 10_000, what: 'the subscription on every master' },
      );
    };
    const controller = new AbortController();
    const waiting = listener.wakeup(`k:${randomUUID()}`, 'v');
    try {
      // The first wait opens the subscriptions and ends once one is confirmed.
      await waiting.wait(10_000, controller.signal);
      await subscribedEverywhere();
      // A wait of a minute: only the listener can end it within the bound below.
      const woken = waiting.wait(60_000, controller.signal).then(() => masters.some((master) => master.connected));
      for (const proxy of proxies) proxy.setMode('reset');
      for (const proxy of proxies) proxy.setMode('pass');
      // Woken while a master takes requests again, so that the attempt it makes can reach it.
      expect(await within(woken, 10_000, 'the waiter to be woken once the subscriptions are back')).toBe(true);
      await subscribedEverywhere();
    } finally {
      controller.abort(new Error('end of test'));
      waiting.close();
      listener.close();
      for (const master of masters) master.close();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });

  it('name the release, the head of the line and the lock key, whatever bytes the key and the value hold', () => {
    const key = 'ключ:1:{x}\u0000🔒';
    const id = randomUUID();
    const waiter = `${randomUUID()} métadonnées 🔒`;
    expect(parseAnnouncement(`${id.length}:${id}${Buffer.byteLength(waiter)}:${waiter}${key}`)).toEqual({ releaseId: id, waiter, lockKey: key });
    expect(parseAnnouncement(`${id.length}:${id}${key}`)).toBeUndefined();
    expect(parseAnnouncement('garbage')).toBeUndefined();
    expect(parseAnnouncement('99:short')).toBeUndefined();
  });
});
