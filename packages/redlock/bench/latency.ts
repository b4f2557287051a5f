/**
 * Acquire + release latency, one sequential client: Redlock over N = 5 masters against one Redis.
 * Run with the shared topology up (`node test-infra/bin/infra.mjs up`):
 *   node --conditions=@fencelock/source --import tsx packages/redlock/bench/latency.ts [cycles]
 * Compare ratios within one run only (the machine is shared).
 */
import type { LockProvider } from '@fencelock/core';
import { createRedisLockProvider } from '@fencelock/redis';
import { defineRedisLockCommands } from '@fencelock/redis-shared';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { createRedlockLockProvider } from '../src/index.js';

const cycles = Number(process.argv[2] ?? 2_000);
const warmup = Math.min(200, Math.floor(cycles / 10));

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function measure(label: string, cycle: (key: string) => Promise<void>): Promise<void> {
  const key = `bench:${label}:${randomUUID()}`;
  for (let i = 0; i < warmup; i += 1) await cycle(key);
  const samples: number[] = [];
  const started = performance.now();
  for (let i = 0; i < cycles; i += 1) {
    const t0 = performance.now();
    await cycle(key);
    samples.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  samples.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(34)} p50 ${percentile(samples, 50).toFixed(3)} ms  p99 ${percentile(samples, 99).toFixed(3)} ms  ` +
      `${(cycles / seconds).toFixed(0)} cycles/s`,
  );
}

async function viaProvider(label: string, provider: LockProvider): Promise<void> {
  try {
    await measure(label, async (key) => {
      const lock = await provider.acquire(key, { ttlMs: 10_000, autoExtend: false });
      await lock.release();
    });
  } finally {
    await provider.close();
  }
}

const { redisUrl, redlockUrls } = topology();
console.log(`${cycles} sequential acquire+release cycles each (after ${warmup} warm-up cycles)`);

const raw = new Redis(redisUrl);
const commands = defineRedisLockCommands(raw);
await measure('raw SET NX PX + release script, 1', async (key) => {
  const owner = randomUUID();
  await raw.set(key, owner, 'PX', 10_000, 'NX');
  await commands.release(key, owner);
});
raw.disconnect();

await viaProvider('@fencelock/redis, 1 Redis', createRedisLockProvider({ connection: redisUrl }));
await viaProvider(`@fencelock/redlock, N = ${redlockUrls.length}`, createRedlockLockProvider({ masters: redlockUrls }));
await viaProvider('@fencelock/redlock, N = 3', createRedlockLockProvider({ masters: redlockUrls.slice(0, 3) }));
