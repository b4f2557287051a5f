import { type LeaderInfo, MAX_OBSERVE_POLL_MS } from '@fencelock/core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type PostgresLockProvider, advisoryLockId, createPostgresLockProvider, electionLockId } from '../src/index.js';
import { holderPids, leaderPids, postgresUrl, rawClient, semaphoreSlots } from './pg.js';

const operator = rawClient();
afterAll(async () => (await operator).end());

const made: PostgresLockProvider[] = [];
const observations: AbortController[] = [];
afterEach(async () => {
  for (const observation of observations.splice(0)) observation.abort();
  await Promise.allSettled(made.splice(0).map((provider) => provider.close()));
});
function provider(): PostgresLockProvider {
  const created = createPostgresLockProvider({ connection: postgresUrl, sessionTtlMs: 3_000 });
  made.push(created);
  return created;
}

/** An observation of `name` by `watcher`, ended after the test. */
function observing(watcher: PostgresLockProvider, name: string, pollMs: number): AsyncIterator<LeaderInfo | undefined> {
  const stop = new AbortController();
  observations.push(stop);
  return watcher.observe(name, { signal: stop.signal, pollMs })[Symbol.asyncIterator]();
}

/** Settles `promise` within `ms`, or rejects naming `what`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads `iterator` until a state satisfies `wanted`, within `ms` in all; resolves that state. */
async function observed(
  iterator: AsyncIterator<LeaderInfo | undefined>,
  wanted: (state: LeaderInfo | undefined) => boolean,
  ms: number,
  what: string,
): Promise<LeaderInfo | undefined> {
  const deadline = performance.now() + ms;
  for (;;) {
    const result = await within(iterator.next(), Math.max(1, Math.ceil(deadline - performance.now())), what);
    if (result.done === true) throw new Error(`the observation ended before ${what}`);
    if (wanted(result.value)) return result.value;
  }
}

/** Resolves once `provider` reports contention for `key`. */
function contended(provider: PostgresLockProvider, key: string): Promise<void> {
  return new Promise((resolve) => {
    const off = provider.on('contended', (event) => {
      if (event.key !== key) return;
      off();
      resolve();
    });
  });
}

// Far longer than any bound below: a change seen in time was told, not polled.
const NEVER_POLLED = MAX_OBSERVE_POLL_MS;

describe('an election is the mutex of its name on an id of its own', () => {
  it('a lock, a semaphore and an election of the same name, held by three sessions, never block each other', async () => {
    const [locker, semaphores, campaigner, other] = [provider(), provider(), provider(), provider()];
    const name = `elect-apart:${crypto.randomUUID()}`;
    const lock = await locker.tryAcquire(name);
    const permit = await semaphores.tryAcquireSemaphore(name, { limit: 1 });
    const leader = await campaigner.tryCampaign(name, { value: 'leader' });
    expect([lock, permit, leader].every((grant) => grant !== undefined)).toBe(true);
    // Each is really held: a fourth session is refused each of them.
    expect(await other.tryAcquire(name)).toBeUndefined();
    expect(await other.tryAcquireSemaphore(name, { limit: 1 })).toBeUndefined();
    expect(await other.tryCampaign(name, { value: 'other' })).toBeUndefined();
    const client = await operator;
    expect(await holderPids(client, name)).toEqual([locker.backendPid]);
    expect(await semaphoreSlots(client, name)).toEqual([{ pid: semaphores.backendPid, slot: 0 }]);
    expect(await leaderPids(client, name)).toEqual([campaigner.backendPid]);
    expect(electionLockId(advisoryLockId(name))).not.toBe(advisoryLockId(name));
    // The lock's inspect shows the lock's holder only, and leader() the campaigner only.
    expect((await other.inspect(name))?.holders.map((holder) => holder.ownerId)).toEqual([lock?.ownerId]);
    expect(await other.leader(name)).toEqual({ name, value: 'leader', term: leader?.term });
    await Promise.all([lock?.release(), permit?.release(), leader?.resign()]);
  });
});

describe('changes told by NOTIFY', () => {
  it('observe hears a new leader and a resignation at once, though it would not poll for a minute', async () => {
    const [a, b, watcher] = [provider(), provider(), provider()];
    const name = `elect-notify:${crypto.randomUUID()}`;
    const iterator = observing(watcher, name, NEVER_POLLED);
    expect(await observed(iterator, () => true, 5_000, 'the current state')).toBeUndefined();
    const first = await a.campaign(name, { value: 'first' });
    expect(await observed(iterator, (state) => state !== undefined, 5_000, 'the first leader')).toEqual({ name, value: 'first', term: first.term });
    // A campaigner waiting when the leader resigns: the grant is told, not only the resignation.
    const queued = contended(b, name);
    const waiting = b.campaign(name, { value: 'second' });
    await queued;
    await first.resign();
    const second = await within(waiting, 5_000, 'second leader');
    expect(await observed(iterator, (state) => state?.value === 'second', 5_000, 'the second leader')).toEqual({ name, value: 'second', term: second.term });
    expect(second.term! > first.term!).toBe(true);
    await second.resign();
    expect(await observed(iterator, (state) => state === undefined, 5_000, 'no leader')).toBeUndefined();
  });

  it("after the watcher's own session was ended, its new session tells observe of the change it missed", async () => {
    const [a, watcher] = [provider(), provider()];
    const name = `elect-reconnect:${crypto.randomUUID()}`;
    const iterator = observing(watcher, name, NEVER_POLLED);
    expect(await observed(iterator, () => true, 5_000, 'the current state')).toBeUndefined();
    const client = await operator;
    await client.query('SELECT pg_terminate_backend($1, 5000)', [watcher.backendPid]);
    // Elected while the watcher's LISTEN is down: its NOTIFY reaches nobody there.
    const leader = await a.campaign(name, { value: 'elected-meanwhile' });
    const pending = iterator.next();
    // The watcher's provider opens a new session for any call of its own (here, a lock).
    const lock = await watcher.acquire(`${name}:other`);
    const result = await within(pending, 5_000, 'the missed leader');
    expect(result).toEqual({ done: false, value: { name, value: 'elected-meanwhile', term: leader.term } });
    await Promise.all([lock.release(), leader.resign()]);
  });
});

describe("the leader's connection killed (pg_terminate_backend)", () => {
  it('aborts its signal with LOCK_LOST; the waiting campaigner leads with a greater term, and observe sees it', async () => {
    const [a, b, watcher] = [provider(), provider(), provider()];
    const name = `elect-killed:${crypto.randomUUID()}`;
    const iterator = observing(watcher, name, NEVER_POLLED);
    const leader = await a.campaign(name, { value: 'a' });
    expect(await observed(iterator, (state) => state !== undefined, 5_000, 'the first leader')).toEqual({ name, value: 'a', term: leader.term });
    const queued = contended(b, name);
    const waiting = b.campaign(name, { value: 'b' });
    await queued;
    const lost = new Promise<unknown>((resolve) => leader.signal.addEventListener('abort', () => resolve(leader.signal.reason), { once: true }));
    const client = await operator;
    expect(await leaderPids(client, name)).toEqual([a.backendPid]);
    await client.query('SELECT pg_terminate_backend($1, 5000)', [a.backendPid]);
    expect(await within(lost, 5_000, 'loss')).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost', key: name });
    // The dead session sent nothing; the waiter's poll finds the lock free, and its grant is told.
    const next = await within(waiting, 10_000, 'the next leader');
    expect(next.term! > leader.term!).toBe(true);
    expect(await observed(iterator, (state) => state?.value === 'b', 5_000, 'the next leader')).toEqual({ name, value: 'b', term: next.term });
    expect(await leader.resign()).toBe(false);
    expect(await a.leader(name)).toEqual({ name, value: 'b', term: next.term });
    await next.resign();
  });

  it('with nobody waiting, observe sees the leader gone by its next read', async () => {
    const [a, watcher] = [provider(), provider()];
    const name = `elect-gone:${crypto.randomUUID()}`;
    const iterator = observing(watcher, name, 50);
    const leader = await a.campaign(name, { value: 'a' });
    const lost = new Promise<void>((resolve) => leader.signal.addEventListener('abort', () => resolve(), { once: true }));
    expect(await observed(iterator, (state) => state !== undefined, 5_000, 'the leader')).toMatchObject({ value: 'a' });
    await (await operator).query('SELECT pg_terminate_backend($1, 5000)', [a.backendPid]);
    // No NOTIFY comes from a dead session, and none from the server: the next read finds nobody.
    expect(await observed(iterator, (state) => state === undefined, 5_000, 'no leader')).toBeUndefined();
    await within(lost, 5_000, 'loss');
  });
});
