import { abortedWithin, nextEvent, within } from '@fencelock/conformance';
import type { LeaderInfo } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type EtcdLockProvider, createEtcdLockProvider, electionName } from '../src/index.js';
import { EtcdctlElect, EtcdctlLock } from './etcdctl.js';

const endpoints = [...topology().etcdEndpoints];
const raw = new Etcd3({ hosts: endpoints });
afterAll(() => raw.close());

const peers: (EtcdctlLock | EtcdctlElect)[] = [];
const providers: EtcdLockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(peers.splice(0).map((peer) => peer.kill()));
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});

// With `as-is` and no prefix, our lock NAME is exactly etcdctl's NAME: keys `NAME/<lease hex>`.
function provider(): EtcdLockProvider {
  const made = createEtcdLockProvider({ connection: { hosts: endpoints }, keyPrefix: '', keyEncoding: 'as-is', sessionTtlMs: 3_000 });
  providers.push(made);
  return made;
}

function etcdctl(name: string, options: { holdUntilFinished: boolean; ttlSeconds?: number }): EtcdctlLock {
  const peer = new EtcdctlLock(endpoints, name, options);
  peers.push(peer);
  return peer;
}

async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol('pending');
  const winner = await Promise.race([promise.then(() => undefined, () => undefined), new Promise((resolve) => setImmediate(() => resolve(marker)))]);
  return winner !== marker;
}

async function untilKeys(prefix: string, count: number): Promise<string[]> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const keys = await raw.getAll().prefix(prefix).keys();
    if (keys.length >= count) return keys;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`fewer than ${count} keys under ${prefix} after 5 s`);
}

describe('interop with etcdctl lock (Go concurrency.Mutex)', () => {
  it('etcdctl holds: our tryAcquire is undefined, and our acquire waits until etcdctl lets go', async () => {
    const name = `fencelock-interop-${randomUUID()}`;
    const peer = etcdctl(name, { holdUntilFinished: true });
    await peer.held(10_000);
    const ours = provider();
    expect(await ours.tryAcquire(name)).toBeUndefined();
    expect(await ours.tryAcquire(name, { mode: 'shared' })).toBeUndefined();
    const waiting = ours.acquire(name, { waitMs: 15_000 });
    // Queued behind etcdctl's key: both keys exist, ours is still waiting.
    await untilKeys(`${name}/`, 2);
    expect(await settledYet(waiting)).toBe(false);
    const exitCode = await peer.finish(10_000);
    expect(exitCode).toBe(0);
    const lock = await within(waiting, 10_000, 'our acquire after etcdctl unlocked');
    expect(lock.isHeld()).toBe(true);
    expect(await lock.release()).toBe(true);
  }, 40_000);

  it('etcdctl killed while holding: its lease outlives it, and we acquire once the lease expires', async () => {
    const name = `fencelock-interop-${randomUUID()}`;
    const peer = etcdctl(name, { holdUntilFinished: true, ttlSeconds: 2 });
    await peer.held(10_000);
    await peer.kill();
    const ours = provider();
    expect(await ours.tryAcquire(name)).toBeUndefined();
    const lock = await ours.acquire(name, { waitMs: 15_000 });
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  }, 40_000);

  it('we hold: etcdctl lock blocks until we release, then runs its command', async () => {
    const name = `fencelock-interop-${randomUUID()}`;
    const ours = provider();
    const lock = await ours.acquire(name);
    const peer = etcdctl(name, { holdUntilFinished: false });
    // etcdctl has queued its own key behind ours and is blocked.
    const keys = await untilKeys(`${name}/`, 2);
    expect(keys).toContain(ours.ownership(lock).etcdKey);
    expect(peer.holding).toBe(false);
    expect(peer.exitedAlready).toBe(false);
    expect(await lock.release()).toBe(true);
    await peer.held(10_000);
    expect(await peer.exit(10_000)).toBe(0);
  }, 40_000);

  it('with the default escape encoding, a plain key is just <keyPrefix><key>: etcdctl lock on that name excludes us', async () => {
    const key = `job-${randomUUID()}`;
    const escaped = createEtcdLockProvider({ connection: { hosts: endpoints }, keyPrefix: 'fencelock-interop/', sessionTtlMs: 3_000 });
    providers.push(escaped);
    const peer = etcdctl(`fencelock-interop/${key}`, { holdUntilFinished: true });
    await peer.held(10_000);
    expect(await escaped.tryAcquire(key)).toBeUndefined();
    expect(await peer.finish(10_000)).toBe(0);
    const lock = await escaped.acquire(key, { waitMs: 10_000 });
    expect(escaped.ownership(lock).etcdKey.startsWith(`fencelock-interop/${key}/`)).toBe(true);
    await lock.release();
  }, 40_000);

  it('our readers also exclude etcdctl, and etcdctl excludes our readers', async () => {
    const name = `fencelock-interop-${randomUUID()}`;
    const [r1, r2] = [provider(), provider()];
    const reader = await r1.acquire(name, { mode: 'shared' });
    const peer = etcdctl(name, { holdUntilFinished: true });
    await untilKeys(`${name}/`, 2);
    expect(peer.holding).toBe(false);
    await reader.release();
    await peer.held(10_000);
    expect(await r2.tryAcquire(name, { mode: 'shared' })).toBeUndefined();
    expect(await peer.finish(10_000)).toBe(0);
    const after = await r2.acquire(name, { mode: 'shared', waitMs: 10_000 });
    await after.release();
  }, 40_000);
});

const ELECTION_PREFIX = 'fencelock-elect/';

// Elections keep the default escape encoding: election NAME is etcdctl's `electionName(NAME, prefix)`.
function electionProvider(): EtcdLockProvider {
  const made = createEtcdLockProvider({ connection: { hosts: endpoints }, keyPrefix: ELECTION_PREFIX, sessionTtlMs: 3_000 });
  providers.push(made);
  return made;
}

function elect(name: string, role: { proposal: string } | { listen: true }): EtcdctlElect {
  const peer = new EtcdctlElect(endpoints, electionName(name, ELECTION_PREFIX), role);
  peers.push(peer);
  return peer;
}

/** Reads an observation until it reports `value`; returns that state. */
async function observed(iterator: AsyncIterator<LeaderInfo | undefined>, value: string, ms: number): Promise<LeaderInfo> {
  const deadline = performance.now() + ms;
  for (let step = 0; step < 100; step += 1) {
    const next = await within(iterator.next(), Math.max(1, Math.ceil(deadline - performance.now())), `observe to report ${value}`);
    if (next.done === true) throw new Error(`the observation ended before reporting ${value}`);
    if (next.value?.value === value) return next.value;
  }
  throw new Error(`observe reported 100 states without ${value}`);
}

describe('interop with etcdctl elect (Go concurrency.Election)', () => {
  it('etcdctl leads and we wait; once its lease is gone we lead with a greater term, and etcdctl elect -l sees our value', async () => {
    const name = `scheduler-${randomUUID()}`;
    const peer = elect(name, { proposal: 'etcdctl-leader' });
    await peer.printed('etcdctl-leader', 10_000);
    const ours = electionProvider();
    const theirs = await ours.leader(name);
    expect(theirs).toMatchObject({ name, value: 'etcdctl-leader' });
    expect(await ours.tryCampaign(name, { value: 'ours' })).toBeUndefined();
    const queued = nextEvent(ours, 'contended', (event) => event.key === name, 10_000);
    const waiting = ours.campaign(name, { value: 'ours', waitMs: 15_000 });
    await queued;
    const observer = elect(name, { listen: true });
    await observer.printed('etcdctl-leader', 10_000);
    // etcdctl stopped without resigning (killed), then its session lease revoked, as its expiry would.
    await untilKeys(`${electionName(name, ELECTION_PREFIX)}/`, 2);
    const leaderKey = (await raw.getAll().prefix(`${electionName(name, ELECTION_PREFIX)}/`).sort('Create', 'Ascend').keys())[0];
    expect(await raw.get(leaderKey!).string()).toBe('etcdctl-leader');
    await peer.kill();
    await raw.leaseClient.leaseRevoke({ ID: leaseOf(leaderKey!) });
    const leader = await within(waiting, 10_000, 'our campaign after etcdctl lost its lease');
    expect(leader.term! > theirs!.term!, `${String(leader.term)} > ${String(theirs!.term)}`).toBe(true);
    expect(await ours.leader(name)).toEqual({ name, value: 'ours', term: leader.term });
    await observer.printed('ours', 10_000);
    // Our candidacy is Go's layout: <election>/<lease hex>, its create revision the term.
    expect(ours.ownership(leader).etcdKey).toBe(`${electionName(name, ELECTION_PREFIX)}/${BigInt(ours.ownership(leader).leaseId).toString(16)}`);
    expect(await leader.resign()).toBe(true);
  }, 40_000);

  it('we lead and etcdctl elect waits until we resign; then it leads, and our observe reports its value', async () => {
    const name = `scheduler-${randomUUID()}`;
    const ours = electionProvider();
    const leader = await ours.campaign(name, { value: 'ours' });
    const stop = new AbortController();
    const iterator = ours.observe(name, { signal: stop.signal })[Symbol.asyncIterator]();
    expect(await observed(iterator, 'ours', 10_000)).toEqual({ name, value: 'ours', term: leader.term });
    const peer = elect(name, { proposal: 'etcdctl-next' });
    // etcdctl has put its candidacy behind ours and waits: it prints only once elected.
    await untilKeys(`${electionName(name, ELECTION_PREFIX)}/`, 2);
    expect(peer.lines).toEqual([]);
    expect(await ours.tryCampaign(name, { value: 'again' })).toBeUndefined();
    expect(await leader.resign()).toBe(true);
    await peer.printed('etcdctl-next', 10_000);
    const next = await observed(iterator, 'etcdctl-next', 10_000);
    expect(next.term! > leader.term!).toBe(true);
    stop.abort();
    // etcdctl resigns on SIGTERM: the election is free again.
    expect(await peer.stop(10_000)).toBe(0);
    const again = await ours.campaign(name, { value: 'ours-again', waitMs: 10_000 });
    expect(again.term! > next.term!).toBe(true);
    await again.resign();
  }, 40_000);

  it("the leader's lease revoked: its handle is lost, the next campaigner leads, and observe reports it", async () => {
    const name = `scheduler-${randomUUID()}`;
    const [a, b, watcher] = [electionProvider(), electionProvider(), electionProvider()];
    const first = await a.campaign(name, { value: 'a' });
    const queued = nextEvent(b, 'contended', (event) => event.key === name, 10_000);
    const waiting = b.campaign(name, { value: 'b', waitMs: 15_000 });
    await queued;
    const stop = new AbortController();
    const iterator = watcher.observe(name, { signal: stop.signal })[Symbol.asyncIterator]();
    await observed(iterator, 'a', 10_000);
    await raw.leaseClient.leaseRevoke({ ID: a.ownership(first).leaseId });
    expect(await abortedWithin(first.signal, 10_000, "the leader's signal after its lease was revoked")).toMatchObject({ code: 'LOCK_LOST', key: name });
    const second = await within(waiting, 10_000, 'the next campaigner to lead');
    expect(second.term! > first.term!).toBe(true);
    expect(await observed(iterator, 'b', 10_000)).toEqual({ name, value: 'b', term: second.term });
    expect(await first.resign()).toBe(false);
    stop.abort();
    await second.resign();
  }, 40_000);
});

/** The session lease of a candidacy key `<election>/<lease hex>`, decimal. */
function leaseOf(key: string): string {
  return BigInt(`0x${key.slice(key.lastIndexOf('/') + 1)}`).toString();
}
