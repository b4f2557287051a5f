import type { LockHandle } from '@fencelock/core';
import { nextEvent, within } from '@fencelock/conformance';
import { monitorRedisCommands, redisCommand, startRedisServer, waitFor, type RedisServer } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptCallsOn } from './helpers.js';
import { REDIS_WRITE_BATCH_LIMIT, redisLockScripts, scriptSha } from '@fencelock/redis-shared';
import { createRedisLockProvider, type RedisLockProvider } from '../src/index.js';

// Request counts: a dedicated server, so that its command counters count this file's requests only.
let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer({ persistence: false });
});
afterAll(async () => {
  await server?.stop();
});

const scriptCalls = (): Promise<number> => scriptCallsOn(server.port);

describe('automatic extension of many locks', () => {
  it('renews locks due together in one script call, not one request per lock', async () => {
    const provider: RedisLockProvider = createRedisLockProvider({ connection: server.url });
    const count = 300;
    const rounds = 2;
    const locks: LockHandle[] = [];
    try {
      const extended = new Map<string, number>();
      provider.on('extended', (event) => extended.set(event.ownerId, (extended.get(event.ownerId) ?? 0) + 1));
      const prefix = `renew:${randomUUID()}:`;
      locks.push(...(await Promise.all(Array.from({ length: count }, (_, i) => provider.acquire(`${prefix}${i}`, { ttlMs: 1_500 })))));
      const before = await scriptCalls();
      await waitFor(
        async () => (locks.every((lock) => (extended.get(lock.ownerId) ?? 0) >= rounds) ? true : undefined),
        { timeoutMs: 20_000, what: `${rounds} automatic extensions of each of ${count} locks` },
      );
      const calls = (await scriptCalls()) - before;
      // One request per lock per round would be count × rounds = 600 calls; batched, a round is a few.
      expect(calls).toBeLessThanOrEqual((count * rounds) / 10);
      expect(locks.every((lock) => lock.isHeld())).toBe(true);
    } finally {
      await Promise.allSettled(locks.map((lock) => lock.release()));
      await provider.close();
    }
  });

  it('reports a lock taken over in the middle of a batch as lost, and extends the others', async () => {
    const provider: RedisLockProvider = createRedisLockProvider({ connection: server.url });
    const prefix = `renew-lost:${randomUUID()}:`;
    const locks = await Promise.all(Array.from({ length: 20 }, (_, i) => provider.acquire(`${prefix}${i}`, { ttlMs: 1_500 })));
    try {
      const victim = locks[7]!;
      const lost = new Promise<string>((resolve) => provider.on('lost', (event) => resolve(event.key)));
      // Another owner's value in place of ours: the next renewal must not extend (or restore) it.
      await redisCommand(server.port, ['SET', victim.key, 'someone-else', 'PX', '60000']);
      expect(await lost).toBe(victim.key);
      expect(victim.isHeld()).toBe(false);
      expect(await redisCommand(server.port, ['GET', victim.key])).toBe('someone-else');
      // The victim's batch-mates are renewed all the same.
      const others = new Set(locks.filter((lock) => lock !== victim).map((lock) => lock.ownerId));
      const renewed = new Set<string>();
      provider.on('extended', (event) => {
        if (others.has(event.ownerId)) renewed.add(event.ownerId);
      });
      await waitFor(async () => (renewed.size === others.size ? true : undefined), { timeoutMs: 5_000, what: 'the other locks renewed' });
      expect(locks.filter((lock) => lock.isHeld())).toHaveLength(19);
    } finally {
      await Promise.allSettled(locks.map((lock) => lock.release()));
      await provider.close();
    }
  });
});

describe('a client shared with code that registered its own scripts', () => {
  it('is not affected by them: the provider registers no command names on the client (malformed replies: see the batcher)', async () => {
    // A client shared with another copy of the library that registered a different script under
    // the batched extension's former command name: the provider sends its scripts by SHA and text.
    const client = new Redis(server.url, { maxRetriesPerRequest: 2 });
    client.defineCommand('fencelockExtendManyVariadic', { lua: "return redis.status_reply('OK')" });
    const provider = createRedisLockProvider({ client });
    try {
      const lock = await provider.acquire(`renew-malformed:${randomUUID()}`, { ttlMs: 10_000, autoExtend: false });
      await lock.extend();
      expect(lock.isHeld()).toBe(true);
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
    } finally {
      await provider.close();
      client.disconnect();
    }
  });
});

describe('many waiters of one key in one process', () => {
  it('a release wakes one of them, not all: attempts per hand-off stay flat', async () => {
    // Polling so slow that only notifications can wake a waiter within the test.
    const retry = { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 1 };
    const holderSide = createRedisLockProvider({ connection: server.url });
    const waiterSide = createRedisLockProvider({ connection: server.url, retry });
    try {
      const key = `herd:${randomUUID()}`;
      const waiters = 30;
      const holder = await holderSide.acquire(key);
      let contended = 0;
      const allWaiting = new Promise<void>((resolve) =>
        waiterSide.on('contended', () => {
          contended += 1;
          if (contended === waiters) resolve();
        }),
      );
      const granted: string[] = [];
      const waiting = Array.from({ length: waiters }, () =>
        waiterSide.acquire(key, { waitMs: 60_000 }).then(async (lock) => {
          granted.push(lock.ownerId);
          await lock.release();
        }),
      );
      await within(allWaiting, 10_000, 'every waiter to find the key held');
      // Each waiter's first attempt has run; count from here.
      const before = await scriptCalls();
      const firstHandOff = nextEvent(waiterSide, 'acquired', () => true, 10_000);
      await holder.release();
      await firstHandOff;
      await within(Promise.all(waiting), 30_000, 'every waiter, one release after another');
      const calls = (await scriptCalls()) - before;
      expect(granted).toHaveLength(waiters);
      // 1 release by the holder, and per waiter: its successful attempt and its release. Waking every
      // local waiter at each release would add about waiters²/2 = 450 failed attempts.
      expect(calls).toBeLessThanOrEqual(1 + 2 * waiters + waiters);
    } finally {
      await Promise.allSettled([holderSide.close(), waiterSide.close()]);
    }
  });
});

describe('a contended hand-off', () => {
  it('is granted by the release itself: the waiter sends no attempt of its own, and extends the lock to its TTL', async () => {
    const a = createRedisLockProvider({ connection: server.url });
    // A waiter that never polls: only a release can end its wait.
    const b = createRedisLockProvider({ connection: server.url, retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 } });
    const monitor = await monitorRedisCommands(server.port);
    try {
      // Open b's subscription first (its first wait opens it), so that nothing but the release wakes it below.
      const warmKey = `direct-warm:${randomUUID()}`;
      const warm = await a.acquire(warmKey);
      const warming = b.acquire(warmKey, { waitMs: 30_000 });
      await nextEvent(b, 'contended', (e) => e.key === warmKey, 5_000);
      await warm.release();
      await (await within(warming, 10_000, 'the warm-up grant')).release();

      const key = `direct:${randomUUID()}`;
      const holder = await a.acquire(key);
      const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
      const waiting = b.acquire(key, { waitMs: 30_000, ttlMs: 30_000 });
      await contended;
      const beforeRelease = await monitor.seenSoFar();
      await holder.release();
      const lock = await within(waiting, 10_000, 'the waiter');
      expect(lock.fencingToken! > holder.fencingToken!).toBe(true);
      // Granted for a short grant TTL, then extended to its own 30 s in the background.
      await waitFor(async () => (Number(await redisCommand(server.port, ['PTTL', key])) > 10_000 ? true : undefined), {
        timeoutMs: 5_000,
        what: 'the granted lock extended to its TTL',
      });
      const afterGrant = await monitor.seenSoFar();
      const acquireSha = scriptSha(redisLockScripts.acquire.lua);
      // The script goes by its SHA, or whole (EVAL) on a connection's first call.
      const attemptsOf = (list: readonly (readonly string[])[]): number =>
        list.filter((args) => {
          const verb = args[0]?.toLowerCase();
          const sha = verb === 'evalsha' ? args[1] : verb === 'eval' ? scriptSha(args[1] ?? '') : undefined;
          return sha === acquireSha && args.includes(lock.ownerId);
        }).length;
      expect(attemptsOf(monitor.commands.slice(0, beforeRelease))).toBe(1);
      expect(attemptsOf(monitor.commands.slice(beforeRelease, afterGrant))).toBe(0);
      expect(lock.isHeld()).toBe(true);
      await lock.release();
    } finally {
      monitor.close();
      await a.close();
      await b.close();
    }
  });

  it('sends no extension for a lock held briefly, with or without auto-extension: core extends it to its TTL within its grant TTL if it is kept', async () => {
    const a = createRedisLockProvider({ connection: server.url });
    const b = createRedisLockProvider({ connection: server.url, retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 } });
    const monitor = await monitorRedisCommands(server.port);
    try {
      const handOff = async (key: string, autoExtend: boolean): Promise<number> => {
        const holder = await a.acquire(key);
        const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
        const waiting = b.acquire(key, { waitMs: 30_000, ttlMs: 30_000, autoExtend });
        await contended;
        const beforeRelease = await monitor.seenSoFar();
        await holder.release();
        const lock = await within(waiting, 10_000, 'the waiter');
        // Released at once, well within the grant TTL (1 s) and before core's first renewal of it: no
        // sleep, so that a loaded machine cannot stretch the hold past that renewal.
        expect(await lock.release()).toBe(true);
        const afterRelease = await monitor.seenSoFar();
        // The waiter's script calls from the hand-off on: its release, and any extension.
        const scripts = monitor.commands.slice(beforeRelease, afterRelease).filter((args) => ['eval', 'evalsha'].includes(args[0]?.toLowerCase() ?? ''));
        return scripts.filter((args) => args.includes(lock.ownerId)).length;
      };
      // The first wait opens b's subscription; the hand-offs below are then granted by the release.
      expect(await handOff(`brief-warm:${randomUUID()}`, true)).toBeGreaterThanOrEqual(1);
      expect(await handOff(`brief:${randomUUID()}`, true)).toBe(1);
      expect(await handOff(`brief-manual:${randomUUID()}`, false)).toBe(1);
      // Kept, it is extended from its grant TTL (1 s) to its own 30 s, auto-extension or not.
      const key = `kept-manual:${randomUUID()}`;
      const holder = await a.acquire(key);
      const contended = nextEvent(b, 'contended', (e) => e.key === key, 5_000);
      const waiting = b.acquire(key, { waitMs: 30_000, ttlMs: 30_000, autoExtend: false });
      await contended;
      await holder.release();
      const kept = await within(waiting, 10_000, 'the waiter');
      await waitFor(async () => (Number(await redisCommand(server.port, ['PTTL', key])) > 10_000 ? true : undefined), {
        timeoutMs: 5_000,
        what: 'the kept lock extended to its TTL',
      });
      expect(kept.validUntil - performance.now()).toBeGreaterThan(10_000);
      expect(await kept.release()).toBe(true);
    } finally {
      monitor.close();
      await a.close();
      await b.close();
    }
  });
});

describe('requests of one turn of the event loop', () => {
  it('leave the connection the provider opened in a few writes, not one each', async () => {
    const provider: RedisLockProvider = createRedisLockProvider({ connection: server.url });
    const prefix = `one-write:${randomUUID()}:`;
    try {
      // Connected, with the scripts loaded: the acquires below are EVALSHA calls and nothing else.
      await (await provider.acquire(`${prefix}warm`, { waitMs: 0 })).release();
      const socket = (provider.client as Redis).stream as Socket & { _writev?: Socket['_writev'] };
      let writes = 0;
      const write = socket._write.bind(socket);
      const writev = socket._writev?.bind(socket);
      socket._write = (chunk, encoding, callback) => {
        writes += 1;
        write(chunk, encoding, callback);
      };
      if (writev !== undefined) {
        socket._writev = (chunks, callback) => {
          writes += 1;
          writev(chunks, callback);
        };
      }
      const count = 40;
      const handles = await Promise.all(Array.from({ length: count }, (_, i) => provider.acquire(`${prefix}${i}`, { waitMs: 0 })));
      // One write per request would be 40. The turn's first request leaves at once and the rest
      // leave REDIS_WRITE_BATCH_LIMIT at a time (so the server starts on them while the rest are
      // written): 1 + ⌈39 / 16⌉ = 4 writes, one more if a request sent in the caller's own turn
      // leaves apart from those the microtasks after it send. Never fewer than 3: the limit holds.
      const batched = 1 + Math.ceil((count - 1) / REDIS_WRITE_BATCH_LIMIT);
      expect(writes).toBeGreaterThanOrEqual(batched - 1);
      expect(writes).toBeLessThanOrEqual(batched + 1);
      expect(handles.every((handle) => handle.isHeld())).toBe(true);
      writes = 0;
      await Promise.all(handles.map((handle) => handle.release()));
      expect(writes).toBeGreaterThanOrEqual(batched - 1);
      expect(writes).toBeLessThanOrEqual(batched + 1);
    } finally {
      await provider.close();
    }
  });
});
