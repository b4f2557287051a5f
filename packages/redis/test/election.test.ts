import type { LeaderInfo, LockProvider } from '@fencelock/core';
import { abortedWithin, nextEvent, observeUntil, within } from '@fencelock/conformance';
import { hashSlot } from '@fencelock/redis-shared';
import { redisCommand, startTcpProxy, topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRedisLockProvider } from '../src/index.js';
import { redisElectionKeys } from '../src/election-keys.js';
import { redisLockKeys } from '../src/redis-keys.js';
import { redisSemaphoreKeys } from '../src/semaphore-keys.js';
import { crashProvider, newCluster } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();
// How long one step (a grant, a renewal finding the key gone, an expiry, a poll) may take.
const STEP_MS = 5_000;

// Reads the server as an operator would; never handed to a provider.
const single = new Redis(redisUrl);
const cluster = newCluster(redisClusterUrls);
const open: LockProvider[] = [];
const clients: { disconnect(): void }[] = [];
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((provider) => provider.close()));
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(() => {
  single.disconnect();
  cluster.disconnect();
});

const topologies = [
  { name: 'single server', raw: single, provider: () => createRedisLockProvider({ connection: redisUrl, defaultTtlMs: 10_000 }) },
  {
    name: 'cluster',
    raw: cluster,
    provider: () => {
      const client = newCluster(redisClusterUrls);
      clients.push(client);
      return createRedisLockProvider({ client, defaultTtlMs: 10_000 });
    },
  },
];

const electionName = (label: string): string => `election-test:${label}:${randomUUID()}`;

describe('election keys', () => {
  it('live in the name\'s slot, apart from every key of the lock and the semaphore of the same name', () => {
    for (const prefix of ['', 'app:', 'conf}{ormance:']) {
      const name = electionName('slots');
      const election = redisElectionKeys(prefix, name);
      const lock = redisLockKeys(prefix, name);
      const semaphore = redisSemaphoreKeys(prefix, name);
      const others = [lock.lock, lock.fence, lock.meta, lock.waiters, lock.reserved, semaphore.holders, semaphore.info, semaphore.fence];
      const own = [election.lock, election.fence, election.meta, election.waiters, election.reserved];
      expect(new Set(own).size).toBe(own.length);
      for (const key of own) {
        expect(hashSlot(key)).toBe(hashSlot(prefix + name));
        expect(others).not.toContain(key);
      }
      expect(election.lock).toMatch(new RegExp(`^\\{[0-9a-z]+\\}fencelock:elect:${escape(prefix + name)}$`));
    }
  });

  it('cannot be reached as a lock or semaphore, and reserved names are refused as elections too', () => {
    const election = redisElectionKeys('', electionName('reserved'));
    // No lock or semaphore name (with or without a prefix) gives the election's mutex key.
    for (const key of [election.lock, election.fence, election.meta]) {
      expect(() => redisLockKeys('', key)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
      expect(() => redisSemaphoreKeys('', key)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    }
    expect(() => redisLockKeys('{ab', `c}fencelock:x`)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    expect(() => redisElectionKeys('', '{abc}fencelock:fence:x')).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    expect(() => redisElectionKeys('{abc}', 'fencelock:meta:x')).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
  });
});

describe.each(topologies)('elections on Redis ($name)', ({ raw, provider: make }) => {
  const provider = (): LockProvider => {
    const made = make();
    open.push(made);
    return made;
  };

  it('are independent of the lock and the semaphore of the same name, and keep the leader at the election\'s keys', async () => {
    const [a, b] = [provider(), provider()];
    const name = electionName('apart');
    const keys = redisElectionKeys('', name);
    // A lock and a semaphore of the name, held first, do not block the election ...
    const lock = await a.acquire(name, { ttlMs: 5_000 });
    const permit = await a.acquireSemaphore(name, { limit: 1, ttlMs: 5_000 });
    const leader = await b.tryCampaign(name, { value: 'host-b' });
    expect(leader).toBeDefined();
    // ... nor does the election block them, while each stays exclusive in its own namespace.
    expect(await a.tryCampaign(name, { value: 'host-a' })).toBeUndefined();
    expect(await b.tryAcquire(name)).toBeUndefined();
    expect(await b.tryAcquireSemaphore(name, { limit: 1 })).toBeUndefined();
    await lock.release();
    await permit.release();
    const again = await b.tryAcquire(name);
    expect(again).toBeDefined();
    const permitAgain = await b.tryAcquireSemaphore(name, { limit: 1 });
    expect(permitAgain).toBeDefined();
    // The election's term comes from its own counter, not the lock's.
    expect(await raw.get(keys.lock)).toBe(leader!.ownerId);
    expect(await raw.get(keys.fence)).toBe(leader!.term!.toString());
    expect(await raw.get(keys.meta)).toBe(`${leader!.term!.toString()} ${Buffer.byteLength(leader!.ownerId)} ${leader!.ownerId} host-b`);
    expect(await raw.get(name)).toBe(again!.ownerId);
    expect(await b.leader(name)).toEqual({ name, value: 'host-b', term: leader!.term });
    expect(await b.inspect(name)).toMatchObject({ holders: [{ ownerId: again!.ownerId }] });
    await again!.release();
    await permitAgain!.release();
    // The lock's release left the election alone; the resign removes the election's mutex key (its
    // metadata expires with the TTL, as a lock's does, and names an owner that no longer holds it).
    expect(await a.leader(name)).toEqual({ name, value: 'host-b', term: leader!.term });
    expect(await leader!.resign()).toBe(true);
    expect(await raw.exists(keys.lock)).toBe(0);
    expect(await a.leader(name)).toBeUndefined();
  });
});

describe('election faults on Redis (single server)', () => {
  const provider = (): LockProvider => {
    const made = topologies[0]!.provider();
    open.push(made);
    return made;
  };

  it('a leader whose key an operator deleted loses leadership; the waiting campaigner leads with a greater term and observe sees it', async () => {
    const [a, b, watcher] = [provider(), provider(), provider()];
    const name = electionName('deleted');
    const keys = redisElectionKeys('', name);
    const stop = new AbortController();
    const seen: (LeaderInfo | undefined)[] = [];
    const iterator = watcher.observe(name, { signal: stop.signal, pollMs: 50 })[Symbol.asyncIterator]();
    try {
      // Automatic extension every third of the TTL finds the key gone.
      const first = await a.campaign(name, { value: 'first', ttlMs: 900, waitMs: STEP_MS });
      await observeUntil(iterator, seen, (state) => state?.value === 'first', STEP_MS, 'the first leader');
      const queued = nextEvent(b, 'contended', (event) => event.key === name, STEP_MS);
      const waiting = b.campaign(name, { value: 'second', ttlMs: 5_000, waitMs: 3 * STEP_MS });
      await queued;
      expect(await single.del(keys.lock)).toBe(1);
      expect(await abortedWithin(first.signal, STEP_MS, 'the deleted leader to lose leadership')).toMatchObject({ code: 'LOCK_LOST', key: name });
      const second = await within(waiting, STEP_MS, 'the waiting campaigner to be elected');
      expect(second.term! > first.term!).toBe(true);
      await observeUntil(iterator, seen, (state) => state?.value === 'second', STEP_MS, 'the second leader');
      expect(seen.at(-1)).toEqual({ name, value: 'second', term: second.term });
      expect(await first.resign()).toBe(false);
      await second.resign();
    } finally {
      stop.abort();
    }
  });

  // Leaders are among the backend's active grants, as locks are: a dropped link makes them uncertain,
  // and the reconnect finds each still held (recovered) or gone (lost).
  it('leaders turn uncertain on a reset link; after reconnecting they recover (still leading) or are lost (deleted meanwhile)', async () => {
    const { port } = new URL(redisUrl);
    const proxy = await startTcpProxy({ targetPort: Number(port) });
    const through = createRedisLockProvider({ connection: `redis://127.0.0.1:${proxy.port}`, defaultTtlMs: 10_000, requestTimeoutMs: 500 });
    try {
      const kept = await through.campaign(electionName('reset-kept'), { value: 'kept', waitMs: STEP_MS });
      const takenName = electionName('reset-taken');
      const taken = await through.campaign(takenName, { value: 'taken', waitMs: STEP_MS });
      const uncertain = nextEvent(through, 'uncertain', (event) => event.ownerId === kept.ownerId, STEP_MS);
      const recovered = nextEvent(through, 'recovered', (event) => event.ownerId === kept.ownerId, 2 * STEP_MS);
      proxy.setMode('reset');
      await uncertain;
      expect(kept.state).toBe('uncertain');
      // While this client is cut off, the second leader's key is deleted behind its back.
      expect(await redisCommand(Number(port), ['DEL', redisElectionKeys('', takenName).lock])).toBe(1);
      proxy.setMode('pass');
      await recovered;
      expect(kept.state).toBe('held');
      expect(await abortedWithin(taken.signal, 2 * STEP_MS, 'the loss found at reconnect')).toMatchObject({ code: 'LOCK_LOST' });
      expect(await kept.resign()).toBe(true);
    } finally {
      await through.close();
      await proxy.close();
    }
  }, 30_000);

  it('a leader whose client crashed is replaced at its expiry by a waiting campaigner with a greater term, and observe sees it', async () => {
    const [a, b, watcher] = [provider(), provider(), provider()];
    const name = electionName('crashed');
    const stop = new AbortController();
    const seen: (LeaderInfo | undefined)[] = [];
    const iterator = watcher.observe(name, { signal: stop.signal, pollMs: 50 })[Symbol.asyncIterator]();
    try {
      const first = await a.campaign(name, { value: 'crashing', ttlMs: 600, waitMs: STEP_MS });
      await observeUntil(iterator, seen, (state) => state?.value === 'crashing', STEP_MS, 'the first leader');
      const queued = nextEvent(b, 'contended', (event) => event.key === name, STEP_MS);
      const waiting = b.campaign(name, { value: 'survivor', ttlMs: 5_000, waitMs: 3 * STEP_MS });
      await queued;
      await crashProvider(a);
      // The crashed process's handle cannot renew: it ends when its validity does.
      expect(await abortedWithin(first.signal, STEP_MS, 'the crashed leader to lose leadership')).toMatchObject({ code: 'LOCK_LOST', key: name });
      const second = await within(waiting, STEP_MS, 'the waiting campaigner to be elected');
      expect(second.term! > first.term!).toBe(true);
      await observeUntil(iterator, seen, (state) => state?.value === 'survivor', STEP_MS, 'the survivor');
      expect(seen.at(-1)).toEqual({ name, value: 'survivor', term: second.term });
      await second.resign();
    } finally {
      stop.abort();
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
