import { within } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type EtcdLockProvider, createEtcdLockProvider } from '../src/index.js';
import { EtcdctlLock } from './etcdctl.js';

const endpoints = [...topology().etcdEndpoints];
const raw = new Etcd3({ hosts: endpoints });
afterAll(() => raw.close());

const peers: EtcdctlLock[] = [];
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
