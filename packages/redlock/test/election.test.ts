import type { LeaderInfo, LockProvider } from '@fencelock/core';
import { abortedWithin, nextEvent, observeUntil, within } from '@fencelock/conformance';
import { redisCommand, topology } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { redlockElectionKeys } from '../src/election-keys.js';
import { redlockKeys } from '../src/lock-keys.js';
import { providerFactory } from './helpers.js';

const { redlockUrls, servers } = topology();
const ports = servers.redlock.map((endpoint) => endpoint.port);
// How long one step (a grant, a renewal finding the key gone, a poll) may take.
const STEP_MS = 5_000;

const factory = providerFactory(() => redlockUrls);
const open: LockProvider[] = [];
const provider = (): LockProvider => {
  const made = factory.createProvider();
  open.push(made);
  return made;
};
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((made) => made.close()));
});
afterAll(() => factory.closeAll());

const electionName = (label: string): string => `redlock-election-test:${label}:${randomUUID()}`;

describe('elections on Redlock', () => {
  it('keep their keys apart from the lock of the same name, and reserved names are refused', () => {
    const name = electionName('keys');
    const election = redlockElectionKeys('app:', name);
    const lock = redlockKeys('app:', name);
    const own = [election.lock, election.waiters, election.reserved];
    for (const key of own) expect([lock.lock, lock.waiters, lock.reserved]).not.toContain(key);
    // No lock name reaches the election's mutex key.
    expect(() => redlockKeys('', election.lock)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    expect(() => redlockElectionKeys('', '{w}fencelock:x')).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
  });

  it('are independent of the lock of the same name; the leader is at the election key on every master, with no term', async () => {
    const [a, b] = [provider(), provider()];
    const name = electionName('apart');
    const lock = await a.acquire(name, { ttlMs: 5_000 });
    const leader = await b.tryCampaign(name, { value: 'host-b' });
    expect(leader).toBeDefined();
    expect(leader!.term).toBeUndefined();
    expect(await a.tryCampaign(name, { value: 'host-a' })).toBeUndefined();
    expect(await b.tryAcquire(name)).toBeUndefined();
    const stored = await Promise.all(ports.map((port) => redisCommand(port, ['GET', redlockElectionKeys('', name).lock])));
    expect(stored).toEqual(ports.map(() => `${leader!.ownerId}\u0000host-b`));
    await lock.release();
    expect(await a.leader(name)).toEqual({ name, value: 'host-b', term: undefined });
    expect(await leader!.resign()).toBe(true);
    expect(await a.leader(name)).toBeUndefined();
  });

  it('a leader whose key an operator deleted loses leadership; the waiting campaigner leads and observe sees it', async () => {
    const [a, b, watcher] = [provider(), provider(), provider()];
    const name = electionName('deleted');
    const stop = new AbortController();
    const seen: (LeaderInfo | undefined)[] = [];
    const iterator = watcher.observe(name, { signal: stop.signal, pollMs: 50 })[Symbol.asyncIterator]();
    try {
      const first = await a.campaign(name, { value: 'first', ttlMs: 900, waitMs: STEP_MS });
      await observeUntil(iterator, seen, (state) => state?.value === 'first', STEP_MS, 'the first leader');
      const queued = nextEvent(b, 'contended', (event) => event.key === name, STEP_MS);
      const waiting = b.campaign(name, { value: 'second', ttlMs: 5_000, waitMs: 3 * STEP_MS });
      await queued;
      await Promise.all(ports.map((port) => redisCommand(port, ['DEL', redlockElectionKeys('', name).lock])));
      expect(await abortedWithin(first.signal, STEP_MS, 'the deleted leader to lose leadership')).toMatchObject({ code: 'LOCK_LOST', key: name });
      const second = await within(waiting, STEP_MS, 'the waiting campaigner to be elected');
      await observeUntil(iterator, seen, (state) => state?.value === 'second', STEP_MS, 'the second leader');
      expect(seen.at(-1)).toEqual({ name, value: 'second', term: undefined });
      expect(await first.resign()).toBe(false);
      await second.resign();
    } finally {
      stop.abort();
    }
  });
});
