import { within } from '@fencelock/conformance';
import { type LockHandle, monotonicNow } from '@fencelock/core';
import { driftMarginMs } from '@fencelock/core/adapter';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EtcdLockProvider, type EtcdLockProviderOptions, createEtcdLockProvider, escapeKeySegment } from '../src/index.js';

const { etcdEndpoints } = topology();
const hosts = [...etcdEndpoints];
// A raw client to look at (and tamper with) what the providers write.
const raw = new Etcd3({ hosts });
afterAll(() => raw.close());

const open: EtcdLockProvider[] = [];
function provider(options: Omit<EtcdLockProviderOptions, 'client' | 'connection'> = {}): EtcdLockProvider {
  const made = createEtcdLockProvider({ connection: { hosts }, sessionTtlMs: 3_000, keyPrefix: 'fencelock-recipe/', ...options });
  open.push(made);
  return made;
}
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((p) => p.close()));
});

const uniqueKey = (label: string): string => `${label}:${randomUUID()}`;
const rangeOf = (key: string, prefix = 'fencelock-recipe/'): string => `${prefix}${escapeKeySegment(key)}/`;

async function waiterKeys(prefix: string): Promise<{ key: string; lease: string; value: string }[]> {
  const response = await raw.getAll().prefix(prefix).sort('Create', 'Ascend').exec();
  return response.kvs.map((kv) => ({ key: kv.key.toString(), lease: kv.lease, value: kv.value.toString() }));
}

async function untilWaiters(prefix: string, count: number): Promise<{ key: string; lease: string; value: string }[]> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const keys = await waiterKeys(prefix);
    if (keys.length >= count) return keys;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`fewer than ${count} waiters under ${prefix} after 5 s`);
}

describe('the concurrency.Mutex layout', () => {
  it('writes <prefix><escaped key>/<lease id in lowercase hex> under the session lease, and its create revision is the token', async () => {
    const a = provider();
    const key = uniqueKey('layout/with slash');
    const lock = await a.acquire(key);
    const own = a.ownership(lock);
    const expectedName = `${rangeOf(key)}${BigInt(own.leaseId).toString(16)}`;
    expect(own.etcdKey).toBe(expectedName);
    expect(own.createRevision).toBe(lock.fencingToken);
    const [stored] = await waiterKeys(rangeOf(key));
    expect(stored?.key).toBe(expectedName);
    expect(stored?.lease).toBe(own.leaseId);
    expect(JSON.parse(stored?.value ?? '{}')).toMatchObject({ owner: lock.ownerId, mode: 'exclusive' });
    await lock.release();
    expect(await waiterKeys(rangeOf(key))).toEqual([]);
  });

  it('a second acquisition of the same key in one session gets a key of its own, waits, and takes over in order', async () => {
    const a = provider();
    const key = uniqueKey('same-session');
    const first = await a.acquire(key);
    const waiting = a.acquire(key, { waitMs: 10_000 });
    const keys = await untilWaiters(rangeOf(key), 2);
    expect(keys[0]?.key).toBe(a.ownership(first).etcdKey);
    expect(keys[1]?.key).toBe(`${keys[0]?.key}_1`);
    expect(keys[1]?.lease).toBe(keys[0]?.lease);
    // The first holder's key is untouched by the second attempt.
    expect(await first.release()).toBe(true);
    const second = await within(waiting, 10_000, 'the second acquisition');
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await second.release();
    expect(await waiterKeys(rangeOf(key))).toEqual([]);
  });

  it('a timed-out or aborted waiter deletes its key; the holder keeps its own', async () => {
    const [a, b] = [provider(), provider()];
    const key = uniqueKey('cleanup');
    const lock = await a.acquire(key);
    await expect(b.acquire(key, { waitMs: 300 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    const controller = new AbortController();
    const aborted = b.acquire(key, { signal: controller.signal });
    await untilWaiters(rangeOf(key), 2);
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
    expect((await waiterKeys(rangeOf(key))).map((k) => k.key)).toEqual([a.ownership(lock).etcdKey]);
    await lock.release();
  });

  it('rounds the session TTL up to whole seconds and computes validity from the granted TTL', async () => {
    const a = provider({ sessionTtlMs: 2_500 });
    expect(a.defaultTtlMs).toBe(3_000);
    const sent = monotonicNow();
    const lock = await a.acquire(uniqueKey('ttl'));
    const { leaseId } = a.ownership(lock);
    const lease = await raw.leaseClient.leaseTimeToLive({ ID: leaseId });
    expect(Number(lease.grantedTTL)).toBe(3);
    expect(lock.validUntil).toBeGreaterThan(sent);
    expect(lock.validUntil).toBeLessThanOrEqual(monotonicNow() + 3_000);
    // Keepalives renew it without extend(): wait for a renewal (a third of the TTL).
    const first = lock.validUntil;
    await within(
      new Promise<void>((resolve, reject) => {
        const started = monotonicNow();
        const poll = setInterval(() => {
          if (lock.validUntil > first) resolve();
          else if (monotonicNow() - started > 5_000) reject(new Error('no renewal'));
          else return;
          clearInterval(poll);
        }, 50);
      }),
      6_000,
      'a keepalive renewal',
    );
    await lock.release();
  });

  it('close() revokes the lease it created; a client handed in stays open', async () => {
    const client = new Etcd3({ hosts });
    try {
      const a = createEtcdLockProvider({ client, sessionTtlMs: 3_000, keyPrefix: 'fencelock-recipe/' });
      const lock = await a.acquire(uniqueKey('close'));
      const { leaseId } = a.ownership(lock);
      await a.close();
      const lease = await raw.leaseClient.leaseTimeToLive({ ID: leaseId });
      expect(Number(lease.TTL)).toBe(-1);
      // Still usable: the provider did not close what it did not open.
      await expect(client.get('fencelock-recipe/none').string()).resolves.toBeNull();
    } finally {
      client.close();
    }
  });

  it('refuses bad options at construction', () => {
    expect(() => createEtcdLockProvider({} as never)).toThrow(TypeError);
    expect(() => createEtcdLockProvider({ connection: { hosts }, client: raw })).toThrow(TypeError);
    expect(() => createEtcdLockProvider({ connection: { hosts }, sessionTtlMs: 1_000 })).toThrow(RangeError);
    expect(() => createEtcdLockProvider({ connection: { hosts }, sessionTtlMs: Number.NaN })).toThrow(RangeError);
    expect(() => createEtcdLockProvider({ connection: { hosts }, keyEncoding: 'base64' as never })).toThrow(TypeError);
    expect(() => createEtcdLockProvider({ connection: { hosts }, ttl: 5 } as never)).toThrow(TypeError);
    // Locks live as long as the session: the TTL is `sessionTtlMs`, never a separate defaultTtlMs.
    expect(() => createEtcdLockProvider({ connection: { hosts }, defaultTtlMs: 5_000 } as never)).toThrow(TypeError);
    expect(() => createEtcdLockProvider({ client: { hosts } as never })).toThrow(TypeError);
  });

  it('requestTimeoutMs fits in a third of the session TTL: a larger one is refused, the default shrinks to fit', async () => {
    expect(() => createEtcdLockProvider({ connection: { hosts }, sessionTtlMs: 2_000, requestTimeoutMs: 1_000 })).toThrow(
      expect.objectContaining({ name: 'LockRangeError', argument: 'options.requestTimeoutMs' }),
    );
    // Checked against the TTL etcd is asked for: 2.5 s is rounded up to 3 s, a third of which is 1 s.
    provider({ sessionTtlMs: 2_500, requestTimeoutMs: 1_000 });
    expect(() => createEtcdLockProvider({ connection: { hosts }, requestTimeout: 1_000 } as never)).toThrow(/unknown option "requestTimeout"/);
    // The shortest session with the default timeout is usable.
    const short = provider({ sessionTtlMs: 2_000 });
    const lock = await short.acquire(uniqueKey('short-session'));
    expect(await lock.release()).toBe(true);
  });
});

describe('keys and foreign holders', () => {
  it("escape: 'a' and 'a/b' are independent; as-is: a holder of 'a/b' blocks 'a', exactly as etcd's Go Mutex", async () => {
    const base = `fencelock-asis-${randomUUID()}`;
    const [x, y] = [provider(), provider()];
    const child = await x.acquire(`${base}/b`);
    expect((await y.tryAcquire(base))?.isHeld()).toBe(true);
    await child.release();
    const [p, q] = [provider({ keyPrefix: '', keyEncoding: 'as-is' }), provider({ keyPrefix: '', keyEncoding: 'as-is' })];
    const asIsChild = await p.acquire(`${base}/b`);
    expect(p.ownership(asIsChild).etcdKey.startsWith(`${base}/b/`)).toBe(true);
    expect(await q.tryAcquire(base)).toBeUndefined();
    await asIsChild.release();
    const parent = await q.tryAcquire(base);
    expect(parent).toBeDefined();
    await parent?.release();
  });

  it('a foreign key under the lock (no fencelock value) excludes writers and readers alike', async () => {
    const name = `fencelock-foreign-${randomUUID()}`;
    const a = provider({ keyPrefix: '', keyEncoding: 'as-is' });
    await raw.put(`${name}/foreign`).value('');
    expect(await a.tryAcquire(name)).toBeUndefined();
    expect(await a.tryAcquire(name, { mode: 'shared' })).toBeUndefined();
    const info = await a.inspect(name);
    expect(info?.holders).toEqual([
      expect.objectContaining({ ownerId: `${name}/foreign`, mode: 'exclusive', metadata: undefined }),
    ]);
    const waiting = a.acquire(name, { mode: 'shared', waitMs: 10_000 });
    await untilWaiters(`${name}/`, 2);
    await raw.delete().key(`${name}/foreign`);
    const reader = await within(waiting, 10_000, 'the reader after the foreign key went');
    expect(reader.mode).toBe('shared');
    await reader.release();
  });
});

describe('safety', () => {
  it('a guarded etcd transaction (ifOwner) commits for the holder and fails for a stale holder', async () => {
    const [a, b] = [provider(), provider()];
    const key = uniqueKey('guarded');
    const resource = `fencelock-recipe-resource/${randomUUID()}`;
    const lock = await a.acquire(key);
    const written = await a.ifOwner(lock, raw).then(raw.put(resource).value('from-a')).commit();
    expect(written.succeeded).toBe(true);
    const stale = a.ownership(lock);
    // The holder's lease ends behind its back (as an expiry would): the next holder takes over.
    await raw.leaseClient.leaseRevoke({ ID: stale.leaseId });
    const next = await b.acquire(key, { waitMs: 10_000 });
    const late = await raw
      .if(stale.etcdKey, 'Create', '==', stale.createRevision.toString())
      .then(raw.put(resource).value('stale write from a'))
      .commit();
    expect(late.succeeded).toBe(false);
    expect(await raw.get(resource).string()).toBe('from-a');
    const fresh = await b.ifOwner(next, raw).then(raw.put(resource).value('from-b')).commit();
    expect(fresh.succeeded).toBe(true);
    expect(await raw.get(resource).string()).toBe('from-b');
    // The old handle learns of the loss (keepalive: lease not found) and refuses to guard anything.
    await within(
      new Promise((resolve) => (lock.signal.aborted ? resolve(undefined) : lock.signal.addEventListener('abort', resolve, { once: true }))),
      5_000,
      'the stale holder to notice',
    );
    expect(lock.signal.reason).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost' });
    expect(() => a.ifOwner(lock, raw)).toThrow(expect.objectContaining({ code: 'LOCK_NOT_HELD' }));
    await next.release();
    await raw.delete().key(resource);
  });

  it('a waiter whose lease ended while it waited is never told it acquired: it re-queues on a new lease (Jepsen, etcd 3.4.3)', async () => {
    const [a, b] = [provider(), provider()];
    const key = uniqueKey('waiter-lease');
    const lock = await a.acquire(key);
    const waiting = b.acquire(key, { waitMs: 15_000 });
    const [, waiter] = await untilWaiters(rangeOf(key), 2);
    // The waiter's lease ends while it waits; the holder then leaves.
    await raw.leaseClient.leaseRevoke({ ID: waiter!.lease });
    await lock.release();
    const next: LockHandle = await within(waiting, 15_000, 'the re-queued waiter');
    const own = b.ownership(next);
    expect(own.leaseId).not.toBe(waiter!.lease);
    const [stored] = await waiterKeys(rangeOf(key));
    expect(stored).toMatchObject({ key: own.etcdKey, lease: own.leaseId });
    const lease = await raw.leaseClient.leaseTimeToLive({ ID: own.leaseId });
    expect(Number(lease.TTL)).toBeGreaterThan(0);
    await next.release();
  });

  it('a try on a lease that ended behind our back starts a new lease instead of reporting the key held', async () => {
    const a = provider();
    const first = await a.acquire(uniqueKey('warm'));
    const { leaseId } = a.ownership(first);
    await raw.leaseClient.leaseRevoke({ ID: leaseId });
    const lock = await a.tryAcquire(uniqueKey('fresh'));
    expect(lock?.isHeld()).toBe(true);
    expect(a.ownership(lock!).leaseId).not.toBe(leaseId);
    expect(first.signal.reason).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost' });
    await lock!.release();
  });

  it('extend is one keepalive now: validity from its send time plus the granted TTL, less the drift margin', async () => {
    const a = provider();
    const lock = await a.acquire(uniqueKey('extend'));
    const sent = monotonicNow();
    await lock.extend();
    expect(lock.validUntil).toBeGreaterThanOrEqual(sent + 3_000 - driftMarginMs(3_000));
    expect(lock.validUntil).toBeLessThanOrEqual(monotonicNow() + 3_000);
    // A key deleted behind the holder's back (etcd's Go Mutex would not notice either) is found by
    // extend: lost, taken over. Leases, not per-key watches, carry loss detection: a watch per held
    // lock cost about 40% of the acquire+release rate here.
    await raw.delete().key(a.ownership(lock).etcdKey);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
    expect(lock.isHeld()).toBe(false);
    expect(await lock.release()).toBe(false);
  });
});
