/**
 * Redlock-specific behaviour on the shared masters: construction checks, client ownership, the
 * validity formula, progress under contention, validity exhaustion, and exclusion with a
 * node-redlock-style lock (plain SET NX PX of a random value on every master).
 */
import { nextEvent, within } from '@fencelock/conformance';
import { type LockError, isLockError, monotonicNow, withLock } from '@fencelock/core';
import { driftMarginMs } from '@fencelock/core/adapter';
import { type TcpProxy, freePort, redisCommand, startTcpProxy, waitFor } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomBytes, randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createRedlockLockProvider } from '../src/index.js';
import { MasterNode } from '../src/master-node.js';
import { EVICTION_POLICY_WARNING } from '@fencelock/redis-shared';
import { sharedMasters } from './helpers.js';

const { redlockUrls, ports, open } = sharedMasters();

/** One proxy per shared master, started by `start()` (which resolves their URLs) and closed after the block. */
function masterProxies(): { readonly proxies: TcpProxy[]; start(): Promise<string[]> } {
  const proxies: TcpProxy[] = [];
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
  });
  return {
    proxies,
    start: async () => {
      for (const port of ports) proxies.push(await startTcpProxy({ targetPort: port }));
      return proxies.map((p) => `redis://127.0.0.1:${p.port}`);
    },
  };
}

describe('construction', () => {
  const refused = (options: unknown, code = 'LOCK_INVALID_ARGUMENT'): void => {
    expect(() => createRedlockLockProvider(options as never)).toThrow(expect.objectContaining({ code }) as Error);
  };

  it('needs an odd number of at least three masters', () => {
    refused({ masters: [] });
    refused({ masters: redlockUrls.slice(0, 1) });
    refused({ masters: redlockUrls.slice(0, 2) });
    refused({ masters: redlockUrls.slice(0, 4) });
    refused({ masters: 'redis://127.0.0.1:7001' });
  });

  it('refuses the same server twice, however it is spelled (host case, localhost, default port, database)', () => {
    refused({ masters: ['redis://127.0.0.1:7001', 'redis://localhost:7001', 'redis://127.0.0.1:7002'] });
    refused({ masters: ['redis://127.0.0.1:7001/0', 'redis://127.0.0.1:7001/3', 'redis://127.0.0.1:7002'] });
    refused({ masters: ['redis://127.0.0.1', 'redis://127.0.0.1:6379', 'redis://127.0.0.1:7002'] });
    refused({ masters: [{ host: 'LOCALHOST', port: 7001 }, 'redis://127.0.0.1:7001', 'redis://127.0.0.1:7002'] });
  });

  it('refuses bad option values, unknown options and non-masters', () => {
    refused({ masters: ['http://127.0.0.1:7001', 'redis://127.0.0.1:7002', 'redis://127.0.0.1:7003'] });
    refused({ masters: [42, 'redis://127.0.0.1:7002', 'redis://127.0.0.1:7003'] });
    refused({ masters: redlockUrls.slice(0, 3), clockDriftFactor: -0.1 });
    refused({ masters: redlockUrls.slice(0, 3), clockDriftFactor: Number.NaN });
    refused({ masters: redlockUrls.slice(0, 3), clockDriftFactor: '0.01' });
    refused({ masters: redlockUrls.slice(0, 3), requestTimeoutMs: 0 });
    refused({ masters: redlockUrls.slice(0, 3), requestTimeoutFactor: 0.5 });
    // A fixed request timeout must fit in a third of the default TTL.
    refused({ masters: redlockUrls.slice(0, 3), requestTimeoutMs: 10_001 });
    refused({ masters: redlockUrls.slice(0, 3), defaultTtlMs: 1_500, requestTimeoutMs: 501 });
    refused({ masters: redlockUrls.slice(0, 3), retry: { factor: 0.5 } });
    refused({ masters: redlockUrls.slice(0, 3), defaultTtlMs: 5 });
    refused({ masters: redlockUrls.slice(0, 3), ttl: 1000 });
  });

  it('refuses the former option names as unknown, naming the new ones', () => {
    const renamed: [string, string][] = [
      ['driftFactor', 'clockDriftFactor'],
      ['nodeTimeoutMs', 'requestTimeoutMs'],
      ['nodeTimeoutFactor', 'requestTimeoutFactor'],
    ];
    for (const [old, now] of renamed) {
      expect(() => createRedlockLockProvider({ masters: redlockUrls.slice(0, 3), [old]: 0.01 } as never)).toThrow(
        expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', name: 'LockTypeError', message: expect.stringContaining(now) as string }) as Error,
      );
    }
    // Fits: a third of the TTL, and the proportional default whatever the TTL.
    expect(() => createRedlockLockProvider({ masters: redlockUrls.slice(0, 3), defaultTtlMs: 1_500, requestTimeoutMs: 500 }).close()).not.toThrow();
    expect(() => createRedlockLockProvider({ masters: redlockUrls.slice(0, 3), defaultTtlMs: 30 }).close()).not.toThrow();
  });

  it('refuses maxExtensions as an unknown option, pointing to maxHoldMs', () => {
    expect(() => createRedlockLockProvider({ masters: redlockUrls.slice(0, 3), maxExtensions: 5 } as never)).toThrow(
      expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', message: expect.stringContaining('maxHoldMs') as string }) as Error,
    );
  });

  it('does not need a reachable majority to construct; acquiring then says which masters failed', async () => {
    const dead = await Promise.all([freePort(), freePort(), freePort()]);
    const provider = open({ masters: dead.map((p) => `redis://127.0.0.1:${p}`), unreachableGraceMs: 0 });
    const error = (await provider.tryAcquire(`dead:${randomUUID()}`).catch((e: unknown) => e)) as LockError;
    expect(isLockError(error, 'LOCK_QUORUM_NOT_REACHED')).toBe(true);
    expect(error.nodes?.map((n) => n.node)).toEqual(dead.map((p) => `127.0.0.1:${p}`));
    expect(error.nodes?.every((n) => n.outcome === 'error')).toBe(true);
  });
});

describe('client ownership', () => {
  it('never closes clients it was handed; closes the ones it created', async () => {
    const clients = redlockUrls.map((url) => new Redis(url));
    try {
      const handed = createRedlockLockProvider({ masters: clients });
      await (await handed.acquire(`own:${randomUUID()}`)).release();
      await handed.close();
      expect(await Promise.all(clients.map((c) => c.ping()))).toEqual(clients.map(() => 'PONG'));
    } finally {
      for (const client of clients) client.disconnect();
    }
  });
});

describe('the algorithm', () => {
  it("validUntil = start + ttl − core's drift margin (⌈ttl × clockDriftFactor⌉ + 2 ms), and the key lives on every master", async () => {
    const provider = open({ clockDriftFactor: 0.1 });
    const key = `validity:${randomUUID()}`;
    const ttlMs = 5_001;
    const before = monotonicNow();
    const lock = await provider.acquire(key, { ttlMs, autoExtend: false });
    const after = monotonicNow();
    expect(lock.validUntil).toBeLessThanOrEqual(after + ttlMs - driftMarginMs(ttlMs, 0.1));
    expect(lock.validUntil).toBeGreaterThanOrEqual(before + ttlMs - driftMarginMs(ttlMs, 0.1));
    expect(lock.fencingToken).toBeUndefined();
    for (const port of ports) {
      expect(await redisCommand(port, ['GET', key])).toBe(lock.ownerId);
      expect(Number(await redisCommand(port, ['PTTL', key]))).toBeLessThanOrEqual(ttlMs);
    }
    expect(await lock.release()).toBe(true);
    for (const port of ports) expect(await redisCommand(port, ['EXISTS', key])).toBe(0);
  });

  it('waiters make progress under contention on five masters (partial grants are released at once)', async () => {
    const providers = Array.from({ length: 8 }, () => open());
    const key = `progress:${randomUUID()}`;
    let inside = 0;
    let overlaps = 0;
    let done = 0;
    await within(
      Promise.all(
        providers.map(async (provider) => {
          for (let round = 0; round < 5; round += 1) {
            await withLock(provider, key, async () => {
              inside += 1;
              if (inside > 1) overlaps += 1;
              await new Promise((resolve) => setTimeout(resolve, 2));
              inside -= 1;
              done += 1;
            }, { waitMs: 30_000 });
          }
        }),
      ),
      40_000,
      'every waiter to finish its rounds',
    );
    expect(overlaps).toBe(0);
    expect(done).toBe(40);
    for (const port of ports) expect(await redisCommand(port, ['EXISTS', key])).toBe(0);
  }, 60_000);

  it('tryAcquire resolves undefined (not an error) when another owner holds a majority', async () => {
    const [a, b] = [open(), open()];
    const key = `contention:${randomUUID()}`;
    const lock = await a.acquire(key);
    expect(await b.tryAcquire(key)).toBeUndefined();
    await expect(b.acquire(key, { waitMs: 100 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    await lock.release();
  });

  it('inspect reports the majority holder with its metadata and remaining TTL', async () => {
    const provider = open();
    const key = `inspect:${randomUUID()}`;
    const lock = await provider.acquire(key, { ttlMs: 5_000, metadata: 'worker\u00007 é' });
    const info = await provider.inspect(key);
    expect(info?.holders[0]).toMatchObject({ ownerId: lock.ownerId, metadata: 'worker\u00007 é', fencingToken: undefined });
    expect(info?.holders[0]?.remainingMs).toBeLessThanOrEqual(5_000);
    await lock.release();
  });

  it('extension is not bounded in count: a lock extended 1,001 times is still held (holds are bounded in time, by maxHoldMs)', async () => {
    const provider = open();
    const key = `many-extensions:${randomUUID()}`;
    const lock = await provider.acquire(key, { ttlMs: 10_000, autoExtend: false });
    // One more than the former default bound of 1,000 extensions per lock.
    for (let extension = 1; extension <= 1_001; extension += 1) await lock.extend();
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
  });

  it('a refused round asks each master once: only masters that granted (or did not answer) are released', async () => {
    const clients = redlockUrls.map((url) => new Redis(url, { maxRetriesPerRequest: 0 }));
    const scripts: string[] = [];
    for (const client of clients) {
      const send = client.sendCommand.bind(client);
      client.sendCommand = (command) => {
        if (command.name === 'eval' || command.name === 'evalsha') scripts.push(String(command.args[0]));
        return send(command);
      };
    }
    try {
      const [a, b] = [open(), open({ masters: clients })];
      const key = `refused-round:${randomUUID()}`;
      const lock = await a.acquire(key);
      expect(await b.tryAcquire(key)).toBeUndefined();
      // One acquire script per master, and no release round behind it: every master refused.
      expect(scripts).toHaveLength(ports.length);
      expect(new Set(scripts).size).toBe(1);
      await lock.release();

      // A foreign value on a majority: the minority that granted is released, and only it.
      scripts.length = 0;
      const majority = ports.slice(0, 3);
      for (const port of majority) await redisCommand(port, ['SET', key, 'foreign', 'PX', '10000']);
      expect(await b.tryAcquire(key)).toBeUndefined();
      expect(scripts).toHaveLength(ports.length + (ports.length - majority.length));
      for (const port of ports.slice(3)) expect(await redisCommand(port, ['EXISTS', key])).toBe(0);
      for (const port of majority) expect(await redisCommand(port, ['GET', key])).toBe('foreign');
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('clients shared with code that registered its own scripts: the provider registers no command names, so extensions work', async () => {
    // Clients shared with another copy of the library that registered a different script under the
    // batched extension's former command name (malformed replies: see the batcher's own test).
    const clients = redlockUrls.slice(0, 3).map((url) => {
      const client = new Redis(url, { maxRetriesPerRequest: 0 });
      client.defineCommand('fencelockExtendManyVariadic', { lua: "return redis.status_reply('OK')" });
      return client;
    });
    try {
      const provider = open({ masters: clients });
      const lock = await provider.acquire(`extend-malformed:${randomUUID()}`, { ttlMs: 10_000, autoExtend: false });
      await lock.extend();
      expect(lock.isHeld()).toBe(true);
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('extend on a majority that lost the key (taken over) rejects with LOCK_LOST', async () => {
    const provider = open();
    const key = `taken-over:${randomUUID()}`;
    const lock = await provider.acquire(key, { autoExtend: false });
    for (const port of ports.slice(0, 3)) await redisCommand(port, ['SET', key, 'someone-else', 'PX', '5000']);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
    expect(lock.signal.aborted).toBe(true);
    expect(await lock.release()).toBe(false);
    for (const port of ports.slice(0, 3)) expect(await redisCommand(port, ['GET', key])).toBe('someone-else');
    for (const port of ports) await redisCommand(port, ['DEL', key]);
  });

  it('a value of another type at the key on a majority (WRONGTYPE) fails at once with LOCK_KEY_CONFLICT; on a minority the lock is taken', async () => {
    const provider = open();
    const key = `wrongtype:${randomUUID()}`;
    const majority = ports.slice(0, 3);
    for (const port of majority) await redisCommand(port, ['HSET', key, 'app', 'data']);
    // An unbounded wait: an acquire that retried the conflict would never settle.
    const error = await provider.acquire(key, { waitMs: Number.POSITIVE_INFINITY }).then(
      () => undefined,
      (failure: unknown) => failure as LockError,
    );
    expect(error).toMatchObject({ code: 'LOCK_KEY_CONFLICT', key });
    expect(error?.message).toContain('WRONGTYPE');
    expect(error?.nodes?.filter((node) => node.outcome === 'error')).toHaveLength(3);
    for (const port of majority) expect(await redisCommand(port, ['HGET', key, 'app'])).toBe('data');
    // The two masters without the foreign value kept no copy of ours.
    await waitFor(async () => ((await Promise.all(ports.slice(3).map((port) => redisCommand(port, ['EXISTS', key])))).every((n) => n === 0) ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the partial grants to be released',
    });
    // On two masters only, a majority is left: the lock is taken there.
    await redisCommand(ports[0]!, ['DEL', key]);
    const lock = await provider.acquire(key);
    expect(await lock.release()).toBe(true);
    for (const port of ports.slice(1, 3)) expect(await redisCommand(port, ['HGET', key, 'app'])).toBe('data');
    for (const port of ports) await redisCommand(port, ['DEL', key]);
  });

  it('a held lock overwritten with another type on a majority: that lock alone is lost, the others extended with it keep theirs, the values stay', async () => {
    const provider = open();
    const [a, b] = [`wrongtype-held:${randomUUID()}`, `wrongtype-kept:${randomUUID()}`];
    const overwritten = await provider.acquire(a, { autoExtend: false });
    const kept = await provider.acquire(b, { autoExtend: false });
    const majority = ports.slice(0, 3);
    for (const port of majority) {
      await redisCommand(port, ['DEL', a]);
      await redisCommand(port, ['HSET', a, 'app', 'data']);
    }
    // Asked in one turn: one script call per master for both.
    const [lost, extended] = await Promise.allSettled([overwritten.extend(), kept.extend()]);
    expect(lost).toMatchObject({ status: 'rejected', reason: { code: 'LOCK_LOST', reason: 'taken-over' } });
    expect(extended.status).toBe('fulfilled');
    expect(await kept.release()).toBe(true);
    for (const port of majority) expect(await redisCommand(port, ['HGET', a, 'app'])).toBe('data');
    for (const port of ports) await redisCommand(port, ['DEL', a]);
  });
});

describe('requests of one turn of the event loop', () => {
  it('leave each master connection the provider opened in one write, not one each', async () => {
    const provider = open();
    const prefix = `one-write:${randomUUID()}:`;
    // Connected, with the scripts loaded: the acquires below are EVALSHA calls and nothing else.
    await (await provider.acquire(`${prefix}warm`, { waitMs: 0 })).release();
    // Writes on sockets to the masters, counted where Node hands them to the socket (this file's
    // worker only): one write carries one request or all the requests of a turn.
    const writesTo = new Map<number, number>();
    const count = (socket: Socket): void => {
      if (ports.includes(socket.remotePort ?? -1)) writesTo.set(socket.remotePort ?? -1, (writesTo.get(socket.remotePort ?? -1) ?? 0) + 1);
    };
    const plainWrite = Socket.prototype._write;
    const plainWritev = Socket.prototype._writev;
    Socket.prototype._write = function (this: Socket, ...args: Parameters<Socket['_write']>) {
      count(this);
      return plainWrite.apply(this, args);
    };
    if (plainWritev !== undefined) {
      Socket.prototype._writev = function (this: Socket, ...args: Parameters<NonNullable<Socket['_writev']>>) {
        count(this);
        return plainWritev.apply(this, args);
      };
    }
    try {
      const locks = 20;
      const handles = await Promise.all(Array.from({ length: locks }, (_, i) => provider.acquire(`${prefix}${i}`, { waitMs: 0 })));
      expect(handles.every((handle) => handle.isHeld())).toBe(true);
      // One write per request would be 20 per master; a request sent in the caller's own turn may
      // leave apart from those sent by the microtasks after it, so at most 2.
      expect([...writesTo.values()].length).toBe(ports.length);
      for (const writes of writesTo.values()) expect(writes).toBeLessThanOrEqual(2);
      writesTo.clear();
      await Promise.all(handles.map((handle) => handle.release()));
      for (const writes of writesTo.values()) expect(writes).toBeLessThanOrEqual(2);
    } finally {
      Socket.prototype._write = plainWrite;
      if (plainWritev !== undefined) Socket.prototype._writev = plainWritev;
    }
  });
});

describe('batched extension rounds', () => {
  it('extensions asked for in one turn share one script call per master per 256 locks, and each lock gets its own verdict', async () => {
    const provider = open();
    const run = `batched:${randomUUID()}`;
    const locks = await Promise.all(Array.from({ length: 300 }, (_, i) => provider.acquire(`${run}:${i}`, { ttlMs: 10_000, autoExtend: false })));
    // Lock 7 is taken over on a majority (lost); lock 200 on a minority only (still ours).
    for (const port of ports.slice(0, 3)) await redisCommand(port, ['SET', `${run}:7`, 'someone-else', 'PX', '5000']);
    for (const port of ports.slice(0, 2)) await redisCommand(port, ['SET', `${run}:200`, 'someone-else', 'PX', '5000']);
    const calls = vi.spyOn(MasterNode.prototype, 'extendMany');
    try {
      const outcomes = await Promise.allSettled(locks.map((lock) => lock.extend()));
      // ⌈300 / 256⌉ = 2 calls on each of the 5 masters, not one per lock.
      expect(calls).toHaveBeenCalledTimes(2 * ports.length);
      expect(outcomes[7]).toMatchObject({ status: 'rejected', reason: { code: 'LOCK_LOST', reason: 'taken-over' } });
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(299);
      expect(locks[200]!.isHeld()).toBe(true);
      expect(locks[7]!.isHeld()).toBe(false);
    } finally {
      calls.mockRestore();
      await Promise.all(locks.map((lock) => lock.release()));
      for (const port of ports) await redisCommand(port, ['DEL', `${run}:7`, `${run}:200`]);
    }
  });
});

describe('validity exhausted', () => {
  const { proxies, start } = masterProxies();

  it('a majority that grants too slowly for the TTL is not a lock: LOCK_QUORUM_NOT_REACHED, nothing left behind', async () => {
    const provider = open({ masters: await start(), requestTimeoutMs: 1_000 });
    const key = `exhausted:${randomUUID()}`;
    // Warm the connections up, then slow every master down past the TTL.
    expect(await provider.inspect(key)).toBeUndefined();
    for (const proxy of proxies) {
      proxy.setDelayMs(30);
      proxy.setMode('delay');
    }
    const error = (await provider.acquire(key, { ttlMs: 20, waitMs: 5_000 }).catch((e: unknown) => e)) as LockError;
    expect(isLockError(error, 'LOCK_QUORUM_NOT_REACHED')).toBe(true);
    // Told apart from other quorum failures by its nodes: a majority did grant it.
    expect(error.nodes?.filter((n) => n.outcome === 'granted').length).toBeGreaterThanOrEqual(3);
    for (const proxy of proxies) proxy.setMode('pass');
    for (const port of ports) expect(await redisCommand(port, ['EXISTS', key])).toBe(0);
  });
});

describe('validity of a slow round', () => {
  const { proxies, start } = masterProxies();

  it("counts from the round's send time with core's drift margin: the round's own time is not taken off twice", async () => {
    const provider = open({ masters: await start(), requestTimeoutMs: 2_000 });
    const key = `slow-round:${randomUUID()}`;
    const ttlMs = 6_000;
    // Warm the connections up, then make every reply take a while.
    expect(await provider.inspect(key)).toBeUndefined();
    for (const proxy of proxies) {
      proxy.setDelayMs(40);
      proxy.setMode('delay');
    }
    const before = monotonicNow();
    const lock = await provider.acquire(key, { ttlMs, autoExtend: false });
    const after = monotonicNow();
    for (const proxy of proxies) proxy.setMode('pass');
    // The round started at or after `before`: its deadline is at least before + ttl − drift, however
    // long its replies took (a deadline from the reply, or minus the elapsed time, would be earlier).
    expect(after - before).toBeGreaterThanOrEqual(40);
    expect(lock.validUntil).toBeGreaterThanOrEqual(before + ttlMs - driftMarginMs(ttlMs));
    expect(lock.validUntil).toBeLessThanOrEqual(after + ttlMs - driftMarginMs(ttlMs));
    expect(await lock.release()).toBe(true);
  });
});

describe('leftovers of a failed acquire', () => {
  const { proxies, start } = masterProxies();

  it('a copy whose release was lost with its connection is released by core once the masters are reachable again', async () => {
    const provider = open({ masters: await start(), requestTimeoutMs: 1_000 });
    const key = `leftover:${randomUUID()}`;
    expect(await provider.inspect(key)).toBeUndefined();
    // Three masters answer too late: their SETs land after the round has given up on them, while
    // the releases sent behind them still sit in the proxies...
    const slow = [0, 1, 2];
    for (const index of slow) {
      proxies[index]!.setDelayMs(2_000);
      proxies[index]!.setMode('delay');
    }
    const attempt = provider.tryAcquire(key, { ttlMs: 60_000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await waitFor(
      async () => {
        const copies = await Promise.all(slow.map((index) => redisCommand(ports[index]!, ['EXISTS', key])));
        return copies.every((exists) => exists === 1) ? true : undefined;
      },
      { what: 'the late SETs to land', timeoutMs: 10_000, intervalMs: 10 },
    );
    // ...and are lost with the connections: the copies stay behind, with a 60 s TTL.
    for (const index of slow) proxies[index]!.setMode('reset');
    expect(await attempt).toMatchObject({ code: 'LOCK_QUORUM_NOT_REACHED' });
    for (const index of slow) expect(await redisCommand(ports[index]!, ['EXISTS', key])).toBe(1);
    for (const index of slow) proxies[index]!.setMode('pass');
    // Core retries the release it was handed until the masters answer: long before the TTL.
    await waitFor(
      async () => {
        const copies = await Promise.all(ports.map((port) => redisCommand(port, ['EXISTS', key])));
        return copies.every((exists) => exists === 0) ? true : undefined;
      },
      { what: 'the leftover copies to be released', timeoutMs: 20_000, intervalMs: 50 },
    );
  }, 40_000);
});

describe('connection loss and return', () => {
  const { proxies, start } = masterProxies();

  it('a majority of connections reset: the handle turns uncertain, then recovered once they are back and the key is still ours', async () => {
    const provider = open({ masters: await start() });
    const lock = await provider.acquire(`uncertain:${randomUUID()}`, { ttlMs: 10_000 });
    const uncertain = nextEvent(provider, 'uncertain', (e) => e.ownerId === lock.ownerId, 5_000);
    for (const proxy of proxies.slice(0, 3)) proxy.setMode('reset');
    await uncertain;
    expect(lock.state).toBe('uncertain');
    expect(lock.isHeld()).toBe(true);
    const recovered = nextEvent(provider, 'recovered', (e) => e.ownerId === lock.ownerId, 10_000);
    for (const proxy of proxies.slice(0, 3)) proxy.setMode('pass');
    await recovered;
    expect(lock.state).toBe('held');
    expect(await lock.release()).toBe(true);
  }, 30_000);
});

describe('interop with node-redlock-style locks (SET NX PX of a random value on each master)', () => {
  const foreignLock = async (key: string, targets: readonly number[]): Promise<string> => {
    const value = randomBytes(16).toString('hex');
    for (const port of targets) await redisCommand(port, ['SET', key, value, 'NX', 'PX', '10000']);
    return value;
  };

  it('a foreign lock on a majority excludes us; inspect shows its value as the owner', async () => {
    const provider = open();
    const key = `interop-foreign:${randomUUID()}`;
    const value = await foreignLock(key, ports);
    expect(await provider.tryAcquire(key)).toBeUndefined();
    expect((await provider.inspect(key))?.holders[0]?.ownerId).toBe(value);
    // Our failed round released only our own grants: the foreign value is untouched everywhere.
    for (const port of ports) expect(await redisCommand(port, ['GET', key])).toBe(value);
    for (const port of ports) await redisCommand(port, ['DEL', key]);
    const lock = await provider.acquire(key);
    await lock.release();
  });

  it('foreign locks with a different value on each master still block us, and inspect reports the key held', async () => {
    const provider = open();
    const key = `interop-split:${randomUUID()}`;
    for (const port of ports.slice(0, 3)) await redisCommand(port, ['SET', key, `v-${port}`, 'PX', '10000']);
    try {
      expect(await provider.tryAcquire(key)).toBeUndefined();
      const info = await provider.inspect(key);
      expect(info?.holders).toHaveLength(1);
      expect(info?.holders[0]?.ownerId).toMatch(/^v-/);
      expect(info?.holders[0]?.remainingMs).toBeUndefined();
    } finally {
      for (const port of ports) await redisCommand(port, ['DEL', key]);
    }
  });

  it('our lock excludes a foreign SET NX on every master, and our release leaves a foreign key alone', async () => {
    const provider = open();
    const key = `interop-ours:${randomUUID()}`;
    const lock = await provider.acquire(key);
    for (const port of ports) expect(await redisCommand(port, ['SET', key, 'foreign', 'NX', 'PX', '10000'])).toBeNull();
    expect(await lock.release()).toBe(true);
    const value = await foreignLock(key, ports);
    expect(await lock.release()).toBe(false);
    for (const port of ports) expect(await redisCommand(port, ['GET', key])).toBe(value);
    for (const port of ports) await redisCommand(port, ['DEL', key]);
  });
});

describe('the eviction-policy warning', () => {
  it('names a master whose maxmemory-policy is not noeviction, once', async () => {
    const port = ports[2]!;
    // Without maxmemory the policy never acts: setting it on a shared master changes nothing else.
    await redisCommand(port, ['CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru']);
    try {
      const provider = open();
      const warnings = (await provider.checkBackend?.()) ?? [];
      expect(warnings.map((warning) => warning.code)).toEqual([EVICTION_POLICY_WARNING]);
      expect(warnings[0]?.message).toContain(`127.0.0.1:${port} runs maxmemory-policy "allkeys-lru"`);
    } finally {
      await redisCommand(port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
    }
    const safe = open();
    expect(await safe.checkBackend?.()).toEqual([]);
  });
});
