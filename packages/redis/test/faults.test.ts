import { isLockError, monotonicNow, type LockProvider } from '@fencelock/core';
import { abortedWithin, describeLockProvider, nextEvent } from '@fencelock/conformance';
import { redisCommand, sleep, startRedisServer, startTcpProxy, waitFor, type RedisServer, type TcpProxy } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineRedisLockCommands } from '@fencelock/redis-shared';
import { createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';
import { EXPECTED_CAPABILITIES, backendWaiters, crashProvider, expectResetRecoversOrLoses, onServer } from './helpers.js';

// Two dedicated servers for the whole file: one with AOF + appendfsync always (the configuration the
// README asks for), one without any persistence (the F10 fault: a restart forgets everything).
// The suite's providers reach the durable one through a proxy, so that their link can be blackholed.
let durable: RedisServer;
let volatile: RedisServer;
let durableProxy: TcpProxy | undefined;
beforeAll(async () => {
  [durable, volatile] = await Promise.all([startRedisServer({ persistence: true }), startRedisServer({ persistence: false })]);
  durableProxy = await startTcpProxy({ targetPort: durable.port });
}, 60_000);
afterAll(async () => {
  await durableProxy?.close();
  await Promise.all([durable?.stop(), volatile?.stop()]);
});

// requestTimeoutMs 500: a third of the suite's 1.5 s TTL, so an extension hanging on a paused server
// fails in time for the next one, and the loss is still found by the deadline.
describeLockProvider({
  name: 'redis (dedicated server, appendfsync always, fault harness)',
  createProvider: () =>
    createRedisLockProvider({ connection: `redis://127.0.0.1:${durableProxy!.port}`, defaultTtlMs: 2_000, requestTimeoutMs: 500 }),
  expectCapabilities: EXPECTED_CAPABILITIES,
  harness: {
    backendWaiters: (key) => backendWaiters(onServer(durable.port))(key),
    outages: {
      // SIGKILL; healed by a restart on its AOF (appendfsync always): the lock is still there, so only
      // core's retried release can free the key before its TTL.
      kill: async () => {
        await durable.kill();
        return () => durable.restart();
      },
      // SIGSTOP; a release sent meanwhile waits in the server's socket and may land on SIGCONT by itself.
      pause: async () => {
        await durable.pause();
        return () => durable.resume();
      },
      // The server keeps running; the providers' link carries nothing until healed (the proxy holds the bytes).
      blackhole: async () => {
        durableProxy!.setMode('blackhole');
        return async () => {
          durableProxy!.setMode('pass');
        };
      },
      // The providers' connections are reset and new ones refused until healed.
      reset: async () => {
        durableProxy!.setMode('reset');
        return async () => {
          durableProxy!.setMode('pass');
        };
      },
    },
    pauseBackend: async (ms) => {
      await durable.pause();
      try {
        await sleep(ms);
      } finally {
        await durable.resume();
      }
    },
    restartBackend: () => durable.restart(),
    crashProvider,
  },
  shortTtlMs: 1_500,
});

describe('redis faults (dedicated servers)', () => {
  const open: LockProvider[] = [];
  const clients: Redis[] = [];
  const provider = (server: RedisServer, requestTimeoutMs = 500): LockProvider => {
    const made = createRedisLockProvider({ connection: server.url, defaultTtlMs: 3_000, requestTimeoutMs });
    open.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
    for (const client of clients.splice(0)) client.disconnect();
  });
  const key = (label: string): string => `faults:${label}:${randomUUID()}`;
  const exists = async (server: RedisServer, redisKey: string): Promise<number> => Number(await redisCommand(server.port, ['EXISTS', redisKey]));

  it('tokens keep increasing across a restart without persistence, although the counter is lost', async () => {
    const locks = provider(volatile);
    const name = key('restart-volatile');
    const first = await locks.acquire(name);
    await first.release();
    const second = await locks.acquire(name);
    await second.release();
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await volatile.restart();
    // The restart really forgot the counter (the F10 fault)...
    expect(await exists(volatile, redisLockKeys('', name).fence)).toBe(0);
    // ...and the next token is still above every earlier one (the counter is floored by the server clock).
    const third = await locks.acquire(name, { waitMs: 10_000 });
    expect(third.fencingToken! > second.fencingToken!).toBe(true);
    await third.release();
  }, 30_000);

  it('the public acquire script keeps tokens increasing across a restart without persistence', async () => {
    const client = new Redis(volatile.url, { maxRetriesPerRequest: 20 });
    clients.push(client);
    const commands = defineRedisLockCommands(client);
    const keys = redisLockKeys('', key('public-restart'));
    const before = await commands.acquire(keys.lock, keys.fence, 'owner-1', 10_000);
    expect(await commands.release(keys.lock, 'owner-1')).toBe(true);
    await volatile.restart();
    const after = await commands.acquire(keys.lock, keys.fence, 'owner-2', 10_000);
    expect(after! > before!).toBe(true);
    expect(await commands.release(keys.lock, 'owner-2')).toBe(true);
  }, 30_000);

  it('a lock survives a restart with appendfsync always: the handle goes uncertain, recovers, and still excludes others', async () => {
    const a = provider(durable);
    const name = key('restart-durable');
    const lock = await a.acquire(name, { ttlMs: 6_000 });
    const uncertain = nextEvent(a, 'uncertain', (e) => e.ownerId === lock.ownerId, 10_000);
    const recovered = nextEvent(a, 'recovered', (e) => e.ownerId === lock.ownerId, 10_000);
    await durable.restart();
    await uncertain;
    await recovered;
    expect(lock.isHeld()).toBe(true);
    // Another client, connected after the restart (one connected before would still be waiting out
    // its reconnect backoff, and its first request could time out in the offline queue).
    const b = provider(durable);
    expect(await b.tryAcquire(name)).toBeUndefined();
    expect((await b.inspect(name))?.holders[0]).toMatchObject({ ownerId: lock.ownerId, fencingToken: lock.fencingToken });
    await lock.extend();
    expect(await lock.release()).toBe(true);
    const next = await b.acquire(name, { waitMs: 5_000 });
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    await next.release();
  }, 30_000);

  it('a lock wiped by a restart without persistence is reported lost on reconnect, long before its TTL', async () => {
    const locks = provider(volatile);
    const name = key('wiped');
    const lock = await locks.acquire(name, { ttlMs: 20_000 });
    await volatile.restart();
    const reason = await abortedWithin(lock.signal, 10_000, 'the loss signal after the restart');
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
    expect(monotonicNow()).toBeLessThan(lock.validUntil);
    expect(await lock.release()).toBe(false);
  }, 30_000);

  it('an acquire that times out on a paused server is released by its own owner id once the server runs again', async () => {
    const locks = provider(volatile, 300);
    const name = key('indeterminate');
    const keys = redisLockKeys('', name);
    await volatile.pause();
    let error: unknown;
    try {
      error = await locks.tryAcquire(name, { ttlMs: 30_000 }).then(() => undefined, (e: unknown) => e);
    } finally {
      await volatile.resume();
    }
    expect(isLockError(error, 'LOCK_BACKEND_UNAVAILABLE')).toBe(true);
    // The server ran the acquire after resuming (its fence counter exists)...
    await waitFor(async () => ((await exists(volatile, keys.fence)) === 1 ? true : undefined), { timeoutMs: 5_000, what: 'the late acquire to run' });
    // ...and the clean-up release right after it: the key is free long before its 30 s TTL.
    await waitFor(async () => ((await exists(volatile, keys.lock)) === 0 ? true : undefined), { timeoutMs: 5_000, what: 'the clean-up release' });
    const next = await provider(volatile).tryAcquire(name);
    expect(next).toBeDefined();
    await next?.release();
  }, 30_000);

  it('bounds every request by requestTimeoutMs on a client handed in without a timeout, and on one opened with a longer one', async () => {
    const given = new Redis(volatile.url);
    given.on('error', () => undefined);
    clients.push(given);
    const handed = createRedisLockProvider({ client: given, requestTimeoutMs: 300 });
    const port = Number(new URL(volatile.url).port);
    const opened = createRedisLockProvider({ connection: { host: '127.0.0.1', port, commandTimeout: 600_000 }, requestTimeoutMs: 300 });
    open.push(handed, opened);
    for (const locks of [handed, opened]) await (await locks.tryAcquire(key('connected')))?.release();
    await volatile.pause();
    try {
      // Unbounded, these would hang until the test's own timeout.
      for (const locks of [handed, opened]) {
        const error = await locks.tryAcquire(key('bounded')).then(() => undefined, (e: unknown) => e);
        expect(isLockError(error, 'LOCK_BACKEND_UNAVAILABLE')).toBe(true);
      }
    } finally {
      await volatile.resume();
    }
  }, 30_000);

  it('a server pause shorter than half the TTL causes no false loss: renewals resume, the token is unchanged', async () => {
    const [a, b] = [provider(durable), provider(durable)];
    const name = key('short-pause');
    const lock = await a.acquire(name, { ttlMs: 3_000 });
    const token = lock.fencingToken;
    await durable.pause();
    try {
      // Long enough for the first automatic extension (at a third of the TTL) to hang and time out.
      await sleep(1_200);
    } finally {
      await durable.resume();
    }
    await nextEvent(a, 'extended', (e) => e.ownerId === lock.ownerId && e.automatic, 5_000);
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.fencingToken).toBe(token);
    expect(await b.tryAcquire(name)).toBeUndefined();
    expect(await lock.release()).toBe(true);
  }, 30_000);

  it('a server that is down gives LOCK_BACKEND_UNAVAILABLE within the wait bound, then works again after it restarts', async () => {
    const locks = provider(volatile, 300);
    const name = key('down');
    await volatile.kill();
    try {
      await expect(locks.tryAcquire(name)).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
      // While waiting, failed attempts are retried until the wait ends; then the failure is reported.
      await expect(locks.acquire(name, { waitMs: 1_000 })).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    } finally {
      await volatile.restart();
    }
    const lock = await locks.acquire(name, { waitMs: 10_000 });
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  }, 30_000);

  it('a connection reset marks the handle uncertain; after reconnecting it recovers (the key persisted) or is lost (it did not)', async () => {
    const proxy = await startTcpProxy({ targetPort: durable.port });
    try {
      const through = createRedisLockProvider({ connection: `redis://127.0.0.1:${proxy.port}`, defaultTtlMs: 10_000, requestTimeoutMs: 500 });
      open.push(through);
      await expectResetRecoversOrLoses(through, proxy, durable.port, [key('reset-kept'), key('reset-taken')]);
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it("the provider's own script calls run again as EVAL after SCRIPT FLUSH (NOSCRIPT), on a client it opened and on one handed in", async () => {
    const given = new Redis(durable.url, { maxRetriesPerRequest: 20 });
    clients.push(given);
    const handed = createRedisLockProvider({ client: given });
    open.push(handed);
    for (const locks of [provider(durable), handed]) {
      const name = key('noscript-provider');
      const first = await locks.acquire(name);
      expect(await given.script('FLUSH')).toBe('OK');
      // The release script is unknown now: the release still deletes the lock.
      expect(await first.release()).toBe(true);
      expect(await given.script('FLUSH')).toBe('OK');
      const second = await locks.acquire(name, { waitMs: 2_000 });
      expect(second.fencingToken! > first.fencingToken!).toBe(true);
      expect(await second.release()).toBe(true);
    }
  }, 30_000);

  it('scripts fall back to EVAL after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const client = new Redis(durable.url, { maxRetriesPerRequest: 20 });
    clients.push(client);
    const commands = defineRedisLockCommands(client);
    const keys = redisLockKeys('', key('noscript'));
    expect(await commands.acquire(keys.lock, keys.fence, 'owner', 10_000)).toBeTypeOf('bigint');
    expect(await client.script('FLUSH')).toBe('OK');
    expect(await commands.extend(keys.lock, 'owner', 10_000)).toBe(true);
    expect(await client.script('FLUSH')).toBe('OK');
    expect(await commands.release(keys.lock, 'owner')).toBe(true);
    expect(await commands.acquire(keys.lock, keys.fence, 'other', 10_000)).toBeTypeOf('bigint');
    expect(await commands.release(keys.lock, 'other')).toBe(true);
  }, 30_000);
});
