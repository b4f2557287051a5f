import { LockErrorCode, type LockProvider, type RetryOptions } from '@fencelock/core';
import { nextEvent, within } from '@fencelock/conformance';
import { HANDOFF_RESERVATION_MS, LINE_TAG_LENGTH, redisLockScripts } from '@fencelock/redis-shared';
import { redisCommand, startTcpProxy, topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';

const { redisUrl } = topology();
const port = Number(new URL(redisUrl).port);

/**
 * What a waiter that crashed while waiting leaves behind: its entry in the key's waiter registry,
 * live for a minute (scored by server time, as the acquire script scores it), and nobody to use it.
 */
async function registerCrashedWaiter(key: string): Promise<void> {
  const [seconds, micros] = (await redisCommand(port, ['TIME'])) as [string, string];
  const until = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + 60_000;
  const { waiters } = redisLockKeys('', key);
  await redisCommand(port, ['ZADD', waiters, String(until), `crashed-${randomUUID()}`]);
  await redisCommand(port, ['PEXPIRE', waiters, '60000']);
}

// Hand-off to waiters: a released lock goes to a client that was already waiting, and releases
// nobody waits for cost no pub/sub message.
describe('hand-off to waiting clients', () => {
  const open: LockProvider[] = [];
  const provider = (channel = `fencelock:test:${randomUUID()}`, options: { retry?: Partial<RetryOptions> } = {}): LockProvider => {
    const made = createRedisLockProvider({ connection: redisUrl, channel, ...options });
    open.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
  });

  it('gives a released lock to the waiter, not to the releaser asking again at once', async () => {
    const [a, b] = [provider(), provider()];
    const key = `handoff:${randomUUID()}`;
    const holder = await a.acquire(key);
    const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
    const waiting = b.acquire(key, { waitMs: 30_000 });
    await contended;
    await holder.release();
    // The lock is free on the server, but reserved for b for a moment: the releaser's waiting acquire
    // is turned away and joins the line.
    const comeback = a.acquire(key, { waitMs: 30_000 });
    const lock = await within(waiting, 10_000, 'the waiter');
    expect(lock.fencingToken! > holder.fencingToken!).toBe(true);
    await lock.release();
    const again = await within(comeback, 10_000, 'the releaser, after the waiter');
    expect(again.fencingToken! > lock.fencingToken!).toBe(true);
    await again.release();
  });

  it('a free key goes to a try-once attempt even while a crashed waiter is registered', async () => {
    const a = provider();
    const key = `handoff-crashed:${randomUUID()}`;
    await registerCrashedWaiter(key);
    const lock = await a.tryAcquire(key);
    expect(lock).toBeDefined();
    await lock!.release();
  });

  it('a waiting acquire of a free key is granted at its first attempt, whoever is registered', async () => {
    const a = provider();
    const key = `handoff-crashed-wait:${randomUUID()}`;
    await registerCrashedWaiter(key);
    const contended: string[] = [];
    const off = a.on('contended', (e) => contended.push(e.key));
    try {
      const lock = await a.acquire(key, { waitMs: 30_000 });
      expect(contended).toEqual([]);
      await lock.release();
    } finally {
      off();
    }
  });

  it('right after a release that reserved the lock for a crashed waiter, a try-once attempt still gets it', async () => {
    const [a, b] = [provider(), provider()];
    const key = `handoff-crashed-release:${randomUUID()}`;
    const holder = await a.acquire(key);
    await registerCrashedWaiter(key);
    expect(await holder.release()).toBe(true);
    const lock = await b.tryAcquire(key);
    expect(lock).toBeDefined();
    await lock!.release();
  });

  it('right after a release to registered waiters, a waiting newcomer is turned away once, then joins the line and gets the lock', async () => {
    const [a, b] = [provider(), provider()];
    const key = `handoff-reserved:${randomUUID()}`;
    const holder = await a.acquire(key);
    await registerCrashedWaiter(key);
    expect(await holder.release()).toBe(true);
    const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
    const lock = await b.acquire(key, { waitMs: 30_000 });
    await contended;
    await lock.release();
  });

  it("handoff 'barging': a waiting attempt takes a free key reserved for the clients in line at once, where 'waiters-first' is turned away first", async () => {
    const key = `handoff-barging:${randomUUID()}`;
    const { reserved } = redisLockKeys('', key);
    await registerCrashedWaiter(key);
    // What a release leaves while clients wait: the free key reserved for them.
    await redisCommand(port, ['SET', reserved, '1', 'PX', '60000']);
    const fair = provider();
    const fairContended = nextEvent(fair, 'contended', (e) => e.key === key, 5_000);
    const fairLock = await fair.acquire(key, { waitMs: 30_000 });
    await fairContended;
    // Its grant ended the reservation; the next release to a line makes one again.
    expect(await redisCommand(port, ['EXISTS', reserved])).toBe(0);
    expect(await fairLock.release()).toBe(true);
    await redisCommand(port, ['SET', reserved, '1', 'PX', '60000']);
    const barging = createRedisLockProvider({ connection: redisUrl, channel: `fencelock:test:${randomUUID()}`, handoff: 'barging' });
    open.push(barging);
    const contended: string[] = [];
    const off = barging.on('contended', (e) => contended.push(e.key));
    try {
      const lock = await barging.acquire(key, { waitMs: 30_000 });
      expect(contended).toEqual([]);
      expect(await redisCommand(port, ['GET', key])).toBe(lock.ownerId);
      // Left to lapse by itself: a barging attempt does not pass the reservation key.
      expect(await redisCommand(port, ['EXISTS', reserved])).toBe(1);
      expect(await lock.release()).toBe(true);
    } finally {
      off();
    }
  });

  it('a release grants the lock to the head of the line in the script itself, for a short grant TTL: a waiter that died in line holds it back no longer', async () => {
    const a = provider();
    const key = `handoff-direct-dead:${randomUUID()}`;
    const { waiters, grants, fence } = redisLockKeys('', key);
    const holder = await a.acquire(key);
    // What a waiting provider leaves in line when it dies between two attempts: its registration
    // (with its line tag) and its direct-grant ask (its attempt 3, a grant TTL of 1 s), live for a minute.
    const [seconds, micros] = (await redisCommand(port, ['TIME'])) as [string, string];
    const until = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + 60_000;
    const deadOwner = `dead-${randomUUID()}`;
    const member = `${deadOwner}|${'T'.repeat(LINE_TAG_LENGTH)}`;
    await redisCommand(port, ['ZADD', waiters, String(until), member]);
    await redisCommand(port, ['HSET', grants, member, `3:${HANDOFF_RESERVATION_MS}`]);
    await redisCommand(port, ['PEXPIRE', waiters, '60000']);
    await redisCommand(port, ['PEXPIRE', grants, '60000']);
    expect(await holder.release()).toBe(true);
    // Granted by the release, with a token of its own past the holder's, and out of the line.
    expect(await redisCommand(port, ['GET', key])).toBe(deadOwner);
    const pttl = Number(await redisCommand(port, ['PTTL', key]));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(HANDOFF_RESERVATION_MS);
    const deadToken = BigInt(String(await redisCommand(port, ['GET', fence])));
    expect(deadToken > holder.fencingToken!).toBe(true);
    expect(await redisCommand(port, ['ZSCORE', waiters, member])).toBeNull();
    expect(await redisCommand(port, ['HEXISTS', grants, member])).toBe(0);
    // Nobody releases it: it frees itself at the end of the grant TTL, and a waiter gets it then.
    const next = await a.acquire(key, { waitMs: 10_000 });
    expect(next.fencingToken! > deadToken).toBe(true);
    await next.release();
  });

  it('a waiter that leaves the line takes its registration out and releases a lock a release granted it on the way, to the next in line', async () => {
    const [a, c] = [provider(), provider()];
    const key = `handoff-leave:${randomUUID()}`;
    const keys = redisLockKeys('', key);
    const register = async (owner: string): Promise<string> => {
      // Lasting 2 s: ahead of any live waiter, whose registration lasts longer (the lowest score leads).
      const [seconds, micros] = (await redisCommand(port, ['TIME'])) as [string, string];
      const until = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + 2_000;
      const member = `${owner}|${'L'.repeat(LINE_TAG_LENGTH)}`;
      await redisCommand(port, ['ZADD', keys.waiters, String(until), member]);
      await redisCommand(port, ['HSET', keys.grants, member, `1:${HANDOFF_RESERVATION_MS}`]);
      await redisCommand(port, ['PEXPIRE', keys.waiters, '60000']);
      await redisCommand(port, ['PEXPIRE', keys.grants, '60000']);
      return member;
    };
    // What a waiting provider's cleanup sends when its acquire has settled without a grant.
    const leave = (owner: string, member: string): Promise<unknown> =>
      redisCommand(port, [
        'EVAL', redisLockScripts.release.lua, '6', keys.lock, keys.waiters, keys.reserved, keys.grants, keys.fence, keys.meta,
        owner, 'fencelock:released', String(HANDOFF_RESERVATION_MS), '0', member,
      ]);
    // A waiter still in line with nothing granted: it only leaves.
    const idle = `idle-${randomUUID()}`;
    const idleMember = await register(idle);
    expect(await leave(idle, idleMember)).toBe(0);
    expect(await redisCommand(port, ['ZSCORE', keys.waiters, idleMember])).toBeNull();
    expect(await redisCommand(port, ['HEXISTS', keys.grants, idleMember])).toBe(0);
    // A waiter granted the lock by a release just as it gave up, with c waiting behind it.
    const holder = await a.acquire(key);
    const gone = `gone-${randomUUID()}`;
    const goneMember = await register(gone);
    const contended = nextEvent(c, 'contended', (e) => e.key === key, 5_000);
    const waiting = c.acquire(key, { waitMs: 30_000 });
    await contended;
    expect(await holder.release()).toBe(true);
    expect(await redisCommand(port, ['GET', key])).toBe(gone);
    // Its cleanup passes the lock on to c at once, rather than leaving it until the grant TTL ends.
    expect(await leave(gone, goneMember)).toBe(1);
    const lock = await within(waiting, 10_000, 'the next in line');
    expect(await redisCommand(port, ['GET', key])).toBe(lock.ownerId);
    await lock.release();
  });

  it('refuses an unknown handoff policy before connecting', () => {
    expect(() => createRedisLockProvider({ connection: redisUrl, handoff: 'fair' as never })).toThrow(/options\.handoff must be 'waiters-first' or 'barging', got "fair"/);
  });

  it('a waiter that gives up has left the line when its acquire settles, its leave-line request answered first', async () => {
    // b's requests reach the server 100 ms late, so a leave-line request still on its way when the
    // call settles would be seen in line by the checks below (and a release on another connection
    // would grant it the lock, as the conformance suite's abort case found under load).
    const proxy = await startTcpProxy({ targetPort: port });
    try {
      const a = provider();
      const b = createRedisLockProvider({ connection: `redis://127.0.0.1:${proxy.port}`, channel: `fencelock:test:${randomUUID()}` });
      open.push(b);
      const key = `handoff-gives-up:${randomUUID()}`;
      const waiters = redisLockKeys('', key).waiters;
      const holder = await a.acquire(key);
      const timingOut = b.acquire(key, { waitMs: 500 });
      await nextEvent(b, 'contended', (e) => e.key === key, 5_000);
      proxy.setDelayMs(100);
      proxy.setMode('delay');
      await expect(timingOut).rejects.toMatchObject({ code: LockErrorCode.TIMEOUT });
      expect(await redisCommand(port, ['ZCARD', waiters])).toBe(0);
      proxy.setMode('pass');
      const aborter = new AbortController();
      const aborted = b.acquire(key, { waitMs: 30_000, signal: aborter.signal });
      await nextEvent(b, 'contended', (e) => e.key === key, 5_000);
      proxy.setMode('delay');
      aborter.abort();
      await expect(aborted).rejects.toMatchObject({ code: LockErrorCode.ABORTED });
      expect(await redisCommand(port, ['ZCARD', waiters])).toBe(0);
      await holder.release();
      const next = await a.tryAcquire(key);
      expect(next).toBeDefined();
      await next!.release();
    } finally {
      await proxy.close();
    }
  });

  it('a waiter whose leave-line request gets no answer settles without it, within its bound: cleanup comes after', async () => {
    const proxy = await startTcpProxy({ targetPort: port });
    try {
      const a = provider();
      // The default request timeout: b's registration lasts retry.maxDelayMs + 2 × that (4.5 s), past
      // the moment the call settles, so what the check below sees is b's own entry, not yet lapsed.
      const b = createRedisLockProvider({ connection: `redis://127.0.0.1:${proxy.port}`, channel: `fencelock:test:${randomUUID()}` });
      open.push(b);
      const key = `handoff-slow:${randomUUID()}`;
      const waiters = redisLockKeys('', key).waiters;
      const holder = await a.acquire(key);
      // b waits in line; then nothing between b and the server gets through, so that the deadline
      // passes with b's leave-line request unanswered: the call settles all the same (its last
      // attempt and the leave share one request timeout past the deadline, see the README).
      const waiting = b.acquire(key, { waitMs: 1_000 });
      await nextEvent(b, 'contended', (e) => e.key === key, 5_000);
      proxy.setMode('blackhole');
      // A timeout, or the failure of its last attempt (which a blackhole makes likely).
      const error: unknown = await waiting.catch((e: unknown) => e);
      expect([LockErrorCode.TIMEOUT, LockErrorCode.BACKEND_UNAVAILABLE]).toContain((error as { code?: unknown }).code);
      expect(await redisCommand(port, ['ZCARD', waiters])).toBe(1);
      proxy.setMode('pass');
      await vi.waitFor(async () => expect(await redisCommand(port, ['ZCARD', waiters])).toBe(0), { timeout: 10_000, interval: 20 });
      await holder.release();
    } finally {
      await proxy.close();
    }
  });

  it('publishes a release only while someone waits for it: a grant to the head of the line, on its own channel', async () => {
    const channel = `fencelock:test:${randomUUID()}`;
    const a = provider(channel);
    // Waiters that never poll, their subscription already open: each keeps the place in line of its
    // first attempt (a poll or the retry after a subscription is confirmed would refresh it).
    const subscribed = async (): Promise<LockProvider> => {
      const waiter = provider(channel, { retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 } });
      const warmKey = `handoff-warm:${randomUUID()}`;
      const warm = await a.acquire(warmKey);
      const waiting = waiter.acquire(warmKey, { waitMs: 30_000 });
      await nextEvent(waiter, 'contended', (e) => e.key === warmKey, 5_000);
      await warm.release();
      await (await within(waiting, 10_000, 'the warm-up grant')).release();
      return waiter;
    };
    const [b, c] = [await subscribed(), await subscribed()];
    const listener = new Redis(redisUrl);
    try {
      const messages: string[] = [];
      const channels: string[] = [];
      const second = new Promise<void>((resolve) => {
        listener.on('pmessage', (_pattern: string, on: string, message: string) => {
          messages.push(message);
          channels.push(on);
          resolve();
        });
      });
      // The shared channel and every provider's own one (`<channel>:<line tag>`).
      await listener.psubscribe(channel, `${channel}:*`);
      const quiet = `handoff-quiet:${randomUUID()}`;
      const busy = `handoff-busy:${randomUUID()}`;
      // Uncontended, even by a client that would have waited: no message.
      await (await a.acquire(quiet, { waitMs: 5_000 })).release();
      // Contended: b waits first, then c; the release names b, the head of the line.
      const holder = await a.acquire(busy);
      const bContended = nextEvent(b, 'contended', (e) => e.key === busy, 5_000);
      const bWaiting = b.acquire(busy, { waitMs: 30_000 });
      await bContended;
      const cContended = nextEvent(c, 'contended', (e) => e.key === busy, 5_000);
      const cWaiting = c.acquire(busy, { waitMs: 30_000 });
      await cContended;
      await holder.release();
      await within(second, 5_000, 'the release message');
      const bLock = await within(bWaiting, 10_000, 'the head of the line');
      // Messages on one connection arrive in publish order: the first is the contended release's, a
      // grant to b (the number of its attempt whose ask it used, and b's token).
      expect(messages[0]).toMatch(new RegExp(`^=${bLock.ownerId.length}:${bLock.ownerId}\\d+:${bLock.fencingToken}:${busy}$`));
      await bLock.release();
      const cLock = await within(cWaiting, 10_000, 'the next waiter');
      // The grant may reach c before it reaches this listener.
      await vi.waitFor(() => expect(messages.length).toBeGreaterThan(1), { timeout: 5_000, interval: 5 });
      expect(messages[1]).toMatch(new RegExp(`^=${cLock.ownerId.length}:${cLock.ownerId}\\d+:${cLock.fencingToken}:${busy}$`));
      // Each head is told on its own provider's channel, so a release wakes one process only.
      expect(channels[0]?.startsWith(`${channel}:`)).toBe(true);
      expect(channels[1]?.startsWith(`${channel}:`)).toBe(true);
      expect(channels[0]).not.toBe(channels[1]);
      await cLock.release();
    } finally {
      listener.disconnect();
    }
  });
});
