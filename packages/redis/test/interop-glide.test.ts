/**
 * Interop through Valkey GLIDE: a provider handed a GLIDE client (standalone or cluster) and the
 * other SET-NX locks on the same key name — redis-py's `Lock` (single server) and a hand-written
 * `SET NX PX` (both topologies) — exclude each other, and neither deletes the other's key.
 */
import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_FLAVOURS, handedClients } from './clients.js';
import { newCluster, onCluster, onServer, type RunCommand } from './helpers.js';
import { PythonLockPeer } from './python-lock-peer.js';

const { redisUrl, redisClusterUrls } = topology();
const { hostname, port } = new URL(redisUrl);
const glide = CLIENT_FLAVOURS.glideResp3;

const open: LockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((provider) => provider.close()));
});
const key = (label: string): string => `interop:glide:${label}:${randomUUID()}`;

let cluster: ReturnType<typeof newCluster> | undefined;
afterAll(() => cluster?.disconnect());

for (const where of ['single server', 'cluster'] as const) {
  describe(`through Valkey GLIDE (${where})`, () => {
    const provider = async (): Promise<LockProvider> => {
      const made = await handedClients(() => (where === 'cluster' ? glide.cluster(redisClusterUrls) : glide.standalone(redisUrl)), { defaultTtlMs: 5_000 }).createProvider();
      open.push(made);
      return made;
    };
    const raw = (): RunCommand => {
      if (where === 'single server') return onServer(Number(port));
      cluster ??= newCluster(redisClusterUrls);
      return onCluster(cluster);
    };

    it('a hand-written SET NX PX excludes us and is excluded by us', async () => {
      const locks = await provider();
      const run = raw();
      const name = key('raw');
      expect(await run(['SET', name, 'hand-written', 'PX', 10_000, 'NX'])).toBe('OK');
      expect(await locks.tryAcquire(name)).toBeUndefined();
      expect((await locks.inspect(name))?.holders[0]).toMatchObject({ ownerId: 'hand-written', fencingToken: undefined });
      expect(Number(await run(['DEL', name]))).toBe(1);
      const lock = await locks.acquire(name);
      expect(await run(['SET', name, 'hand-written', 'PX', 10_000, 'NX'])).toBeNull();
      expect(await run(['GET', name])).toBe(lock.ownerId);
      expect(await lock.release()).toBe(true);
      expect(Number(await run(['EXISTS', name]))).toBe(0);
    });
  });
}

describe("through Valkey GLIDE, with redis-py's Lock (single server)", () => {
  let python: PythonLockPeer;
  beforeAll(async () => {
    python = await PythonLockPeer.start(hostname, Number(port));
  });
  afterAll(async () => {
    await python?.stop();
  });

  it('its lock excludes us until released (a waiter polls: redis-py publishes nothing); ours excludes it', async () => {
    const locks = await handedClients(() => glide.standalone(redisUrl), { defaultTtlMs: 5_000 }).createProvider();
    open.push(locks);
    const name = key('python');
    const held = await python.acquire(name, 10_000);
    expect(held.ok).toBe(true);
    expect(await locks.tryAcquire(name)).toBeUndefined();
    const waiting = locks.acquire(name, { waitMs: 10_000 });
    await python.release(name);
    const lock = await waiting;
    expect((await python.acquire(name, 10_000)).ok).toBe(false);
    expect(await lock.release()).toBe(true);
    expect((await python.acquire(name, 10_000)).ok).toBe(true);
    expect(await lock.release()).toBe(false);
    await python.release(name);
  });
});
