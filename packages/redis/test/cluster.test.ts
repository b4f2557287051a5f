import type { LockProvider } from '@fencelock/core';
import { redisCommand, topology } from '@fencelock/test-infra';
import type { Cluster } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EVICTION_POLICY_WARNING, defineRedisLockCommands, hashSlot } from '@fencelock/redis-shared';
import { createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';
import { clusterNode, newCluster } from './helpers.js';

const { redisClusterUrls } = topology();
const firstPort = clusterNode(redisClusterUrls[0] ?? '').port;

// Keys whose braces move (or do not move) the hash slot: the first '{', the first '}' after it, and
// only a non-empty tag counts.
const BRACE_KEYS = ['a{b}c', '{}x', '{}{x}', '}{', '{x', 'x}', '{a}{b}', '{{a}}', '}{a}', 'é{ü}', '{🔒}', 'x{}', '{', '}', 'a\u0000{b}'];

async function serverSlot(key: string): Promise<number> {
  return Number(await redisCommand(firstPort, ['CLUSTER', 'KEYSLOT', key]));
}

describe('redis cluster: keys with braces', () => {
  let cluster: Cluster;
  const open: LockProvider[] = [];
  beforeAll(() => {
    cluster = newCluster(redisClusterUrls);
  });
  afterAll(() => cluster?.disconnect());
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
  });

  it('computes the same slot as the server, and puts the fence and metadata keys in the lock key slot', async () => {
    const suffix = randomUUID();
    for (const key of [...BRACE_KEYS, ...BRACE_KEYS.map((k) => `${k}:${suffix}`), ...BRACE_KEYS.map((k) => `pfx{:${k}`)]) {
      const keys = redisLockKeys('', key);
      const slot = await serverSlot(keys.lock);
      expect(hashSlot(keys.lock), key).toBe(slot);
      expect(await serverSlot(keys.fence), `fence of ${key}`).toBe(slot);
      expect(await serverSlot(keys.meta), `meta of ${key}`).toBe(slot);
    }
  });

  it('locks, fences and releases keys with braces through an ioredis Cluster (no CROSSSLOT)', async () => {
    const [a, b] = [createRedisLockProvider({ client: cluster }), createRedisLockProvider({ client: cluster })];
    open.push(a, b);
    const suffix = randomUUID();
    for (const base of BRACE_KEYS) {
      const key = `${base}:${suffix}`;
      const first = await a.acquire(key, { metadata: 'm' });
      expect(await b.tryAcquire(key)).toBeUndefined();
      expect((await b.inspect(key))?.holders[0]).toMatchObject({ ownerId: first.ownerId, fencingToken: first.fencingToken, metadata: 'm' });
      await first.extend();
      expect(await first.release()).toBe(true);
      const second = await b.acquire(key);
      expect(second.fencingToken! > first.fencingToken!, key).toBe(true);
      expect(await second.release()).toBe(true);
    }
  });

  it('the public commands work on a Cluster', async () => {
    const commands = defineRedisLockCommands(cluster);
    const keys = redisLockKeys('', `public{x}:${randomUUID()}`);
    const token = await commands.acquire(keys.lock, keys.fence, 'one', 10_000);
    expect(token).toBeTypeOf('bigint');
    expect(await commands.acquire(keys.lock, keys.fence, 'two', 10_000)).toBeUndefined();
    // The same owner again (a retry after a lost reply) takes its own lock over with a larger token.
    const retried = await commands.acquire(keys.lock, keys.fence, 'one', 10_000);
    expect(retried! > token!).toBe(true);
    expect(await commands.extend(keys.lock, 'two', 10_000)).toBe(false);
    expect(await commands.extend(keys.lock, 'one', 10_000)).toBe(true);
    expect(await commands.release(keys.lock, 'two')).toBe(false);
    expect(await commands.release(keys.lock, 'one')).toBe(true);
    expect((await commands.acquire(keys.lock, keys.fence, 'two', 10_000))! > retried!).toBe(true);
    expect(await commands.release(keys.lock, 'two')).toBe(true);
  });
});

describe('redis cluster: the eviction-policy warning', () => {
  it('reads every master: one master with volatile-lru is enough for the warning', async () => {
    const cluster = newCluster(redisClusterUrls);
    const provider = createRedisLockProvider({ client: cluster });
    // Without maxmemory the policy never acts: setting it on the shared cluster changes nothing else.
    await redisCommand(firstPort, ['CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru']);
    try {
      const warnings = (await provider.checkBackend?.()) ?? [];
      expect(warnings.map((warning) => warning.code)).toEqual([EVICTION_POLICY_WARNING]);
      expect(warnings[0]?.message).toContain(`:${firstPort} runs maxmemory-policy "volatile-lru"`);
    } finally {
      await redisCommand(firstPort, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
      await provider.close();
      cluster.disconnect();
    }
  });
});
