/**
 * `pnpm bench:fence-growth`: what one fence counter per distinct key costs Redis, and that the
 * counters go away once their lifetime has passed. On a dedicated server (nothing else writes to
 * it), acquires and releases FENCE_GROWTH_KEYS distinct keys (default 1,000,000; 1 s TTL;
 * FENCE_GROWTH_PARALLEL at a time, default 64) with `fenceCounterTtlMs` = FENCE_GROWTH_TTL_MS
 * (default 300 s: longer than the run, so every counter is still there at its end). Then reads
 * `DBSIZE` and `used_memory` once the locks' metadata keys have expired, and waits (bounded by
 * FENCE_GROWTH_WAIT_S, default 600 s) until the server is back to its starting key count. Writes the
 * section docs/bench/fence-growth.md, which every `pnpm bench` run puts into docs/BENCHMARKS.md.
 */
import { writeFile } from 'node:fs/promises';
import { createRedisLockProvider } from '@fencelock/redis';
import { redisCommand, startRedisServer } from '@fencelock/test-infra';

const env = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer`);
  return value;
};
const keyCount = env('FENCE_GROWTH_KEYS', 1_000_000);
const parallel = env('FENCE_GROWTH_PARALLEL', 64);
const fenceTtlMs = env('FENCE_GROWTH_TTL_MS', 300_000);
const waitS = env('FENCE_GROWTH_WAIT_S', 600);

async function serverState(port: number): Promise<{ keys: number; usedBytes: number }> {
  const keys = Number(await redisCommand(port, ['DBSIZE']));
  const memory = String(await redisCommand(port, ['INFO', 'memory']));
  const usedBytes = Number(/used_memory:(\d+)/.exec(memory)?.[1] ?? Number.NaN);
  return { keys, usedBytes };
}

const server = await startRedisServer();
const provider = createRedisLockProvider({ connection: server.url, fenceCounterTtlMs: fenceTtlMs, defaultTtlMs: 1_000 });
try {
  const before = await serverState(server.port);
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    // Bounded: each worker takes keys until all keyCount are done.
    while (next < keyCount) {
      const index = next;
      next += 1;
      const lock = await provider.acquire(`order:${index}`);
      await lock.release();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  const loopS = (performance.now() - started) / 1000;
  const lastAcquire = performance.now();
  // The metadata keys expire with their lock (1 s), but Redis removes expired keys lazily: one SCAN
  // pass deletes those it meets, so that the count is the fence counters alone.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  let cursor = '0';
  for (let pass = 0; pass < 100_000; pass += 1) {
    const reply = (await redisCommand(server.port, ['SCAN', cursor, 'COUNT', '10000'])) as [string, unknown];
    cursor = String(reply[0]);
    if (cursor === '0') break;
  }
  const after = await serverState(server.port);
  const deadline = lastAcquire + waitS * 1000;
  let back = await serverState(server.port);
  while (back.keys > before.keys && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    back = await serverState(server.port);
  }
  const goneAfterS = back.keys > before.keys ? undefined : (performance.now() - lastAcquire) / 1000;
  const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
  const counters = after.keys - before.keys;
  const perKey = (after.usedBytes - before.usedBytes) / Math.max(1, counters);
  const gone =
    goneAfterS === undefined
      ? `**not within ${waitS} s** (${back.keys - before.keys} keys left)`
      : `${goneAfterS.toFixed(0)} s after the last acquisition (used_memory ${mib(back.usedBytes)} MiB)`;
  const section = [
    '## Fence counters: key growth (`pnpm bench:fence-growth`)',
    '',
    `Measured ${new Date().toISOString()} with \`pnpm infra:up && pnpm bench:fence-growth\` (a dedicated Redis; not part of`,
    '`pnpm bench`, whose runs carry this section over). One fence counter per distinct key, each living',
    '`fenceCounterTtlMs` after its key\'s last acquisition (default 7 days; here shorter, to see them go).',
    `${keyCount.toLocaleString('en-US')} distinct keys, ${parallel} at a time, took ${loopS.toFixed(0)} s (${Math.round(keyCount / loopS)} acquire+release/s).`,
    '',
    '| distinct keys | fenceCounterTtlMs | fence counters after the run | used_memory before → after | per counter | back to the starting key count |',
    '|---:|---:|---:|---|---:|---|',
    `| ${keyCount.toLocaleString('en-US')} | ${fenceTtlMs.toLocaleString('en-US')} | ${counters.toLocaleString('en-US')} | ${mib(before.usedBytes)} → ${mib(after.usedBytes)} MiB | ${Math.round(perKey)} B | ${gone} |`,
    '',
    'With the default lifetime the same counters stay for 7 days after their last use; with',
    '`fenceCounterTtlMs: Infinity`, forever (about the figure above per distinct key).',
    '',
  ].join('\n');
  console.log(section);
  await writeFile(new URL('../../../docs/bench/fence-growth.md', import.meta.url), section);
} finally {
  await provider.close();
  await server.stop();
}
