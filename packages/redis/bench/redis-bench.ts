/**
 * Benchmark of @fencelock/redis against the raw ioredis round trip, on the shared Redis
 * (FENCELOCK_REDIS_URL, default redis://127.0.0.1:6379). Run: `pnpm --filter @fencelock/redis bench`
 * (or `npx tsx --conditions=@fencelock/source bench/redis-bench.ts` in packages/redis).
 *
 * Reports, in one run so the ratios are comparable:
 * 1. raw ioredis: sequential `SET key v NX PX` + Lua compare-and-delete cycles per second;
 * 2. the protocol scripts alone, and fencelock: sequential uncontended `acquire` + `release` cycles per second (one script each way);
 * 3. hand-off latency with 4 clients on one key: from the holder calling `release()` to another
 *    client's `acquire()` resolving — with release notifications, and with polling only.
 * Bounded: every phase runs for a fixed time or count.
 */
import type { LockHandle, LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { defineRedisLockCommands } from '@fencelock/redis-shared';
import { createRedisLockProvider } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';

const { redisUrl } = topology();
const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 3_000);
const HANDOFFS = Number(process.env.BENCH_HANDOFFS ?? 300);

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(3)} ms, p95 ${percentile(sorted, 95).toFixed(3)} ms, p99 ${percentile(sorted, 99).toFixed(3)} ms (n=${sorted.length})`;
}

async function timed(label: string, cycle: () => Promise<void>): Promise<{ rate: number; samples: number[] }> {
  for (let warm = 0; warm < 200; warm += 1) await cycle();
  const samples: number[] = [];
  const start = performance.now();
  while (performance.now() - start < PHASE_MS) {
    const t = performance.now();
    await cycle();
    samples.push(performance.now() - t);
  }
  const rate = samples.length / ((performance.now() - start) / 1000);
  console.log(`${label}: ${rate.toFixed(0)} cycles/s, ${summary(samples)}`);
  return { rate, samples };
}

const RAW_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

async function rawRoundTrip(): Promise<number> {
  const client = new Redis(redisUrl);
  try {
    await timed('raw ioredis PING', async () => {
      await client.ping();
    });
    const key = `bench:raw:${randomUUID()}`;
    const { rate } = await timed('raw ioredis SET NX PX + Lua release', async () => {
      const owner = randomUUID();
      if ((await client.set(key, owner, 'PX', 30_000, 'NX')) !== 'OK') throw new Error('raw lock not taken');
      await client.eval(RAW_RELEASE, 1, key, owner);
    });
    return rate;
  } finally {
    client.disconnect();
  }
}

async function scriptsOnly(): Promise<number> {
  const client = new Redis(redisUrl);
  try {
    const commands = defineRedisLockCommands(client);
    const keys = redisLockKeys('', `bench:scripts:${randomUUID()}`);
    const { rate } = await timed('fencelock scripts only (defineRedisLockCommands acquire + release)', async () => {
      const owner = randomUUID();
      if ((await commands.acquire(keys.lock, keys.fence, owner, 30_000)) === undefined) throw new Error('not taken');
      await commands.release(keys.lock, owner);
    });
    return rate;
  } finally {
    client.disconnect();
  }
}

async function uncontended(): Promise<number> {
  const provider = createRedisLockProvider({ connection: redisUrl });
  try {
    const key = `bench:uncontended:${randomUUID()}`;
    const { rate } = await timed('fencelock acquire + release (uncontended)', async () => {
      const lock = await provider.acquire(key, { waitMs: 0 });
      await lock.release();
    });
    return rate;
  } finally {
    await provider.close();
  }
}

/**
 * 4 clients loop on one key. A holder releases at once; after releasing it waits for the next
 * acquisition before competing again, so every hand-off goes to a client that was already waiting.
 */
async function handoff(label: string, notify: boolean): Promise<number[]> {
  const channel = `bench:${randomUUID()}`;
  // Poll-only: each client has a channel of its own, so no other client hears its releases.
  const providers: LockProvider[] = Array.from({ length: 4 }, (_, index) =>
    createRedisLockProvider({ connection: redisUrl, channel: notify ? channel : `${channel}:${index}`, defaultWaitMs: 30_000 }),
  );
  const key = `bench:handoff:${randomUUID()}`;
  const samples: number[] = [];
  let releasedAt: number | undefined;
  let handoffs = 0;
  let nextAcquired: (() => void) | undefined;
  const acquiredOnce = (): Promise<void> => new Promise((resolve) => (nextAcquired = resolve));
  const worker = async (index: number): Promise<void> => {
    const provider = providers[index]!;
    while (handoffs < HANDOFFS) {
      const lock: LockHandle = await provider.acquire(key);
      if (releasedAt !== undefined) samples.push(performance.now() - releasedAt);
      handoffs += 1;
      nextAcquired?.();
      const next = acquiredOnce();
      // Hold briefly, so the client that released before is waiting again (not just arriving).
      await new Promise((resolve) => setTimeout(resolve, 2));
      releasedAt = performance.now();
      await lock.release();
      if (handoffs >= HANDOFFS) break;
      await Promise.race([next, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    }
  };
  try {
    await Promise.all(providers.map((_, index) => worker(index)));
  } finally {
    await Promise.all(providers.map((p) => p.close()));
  }
  console.log(`${label}: hand-off ${summary(samples)}`);
  return samples;
}

const raw = await rawRoundTrip();
await scriptsOnly();
const ours = await uncontended();
console.log(`ratio fencelock / raw: ${(ours / raw).toFixed(2)}`);
await handoff('4 clients, one key, notified', true);
await handoff('4 clients, one key, polling only (core default backoff 10..500 ms)', false);
