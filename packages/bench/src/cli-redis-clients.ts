/**
 * `pnpm --filter @fencelock/bench bench:redis-clients`: the per-client section alone (fencelock
 * beside the raw lock loop on each Redis client library), on the shared Redis. Prints the table and
 * writes bench-results/redis-clients.json; docs/BENCHMARKS.md is written by full runs only. Bounds,
 * from the environment, as in `pnpm bench`: BENCH_SECONDS (default 3), BENCH_ROUNDS (default 5),
 * BENCH_CYCLES (default 20000); BENCH_REDIS_CLIENTS: comma-separated library ids (ioredis5, ioredis6,
 * iovalkey, node-redis5, node-redis6, glide) or parts of them, to run a subset.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sharedAddresses } from './bench-servers.js';
import { listSetting, positiveSetting } from './cli-env.js';
import { redisClientsCommand, redisClientsMarkdown, runRedisClients } from './redis-clients.js';
import { redisClientPairs } from './subjects-redis-clients.js';

const settings = { maxMs: positiveSetting('BENCH_SECONDS', 3) * 1000, rounds: Math.round(positiveSetting('BENCH_ROUNDS', 5)), maxCycles: positiveSetting('BENCH_CYCLES', 20_000) };
const only = listSetting('BENCH_REDIS_CLIENTS');
const errors: Record<string, string> = {};
const startedAt = new Date().toISOString();
const results = await runRedisClients(
  redisClientPairs(sharedAddresses().redisUrl, only),
  settings,
  (subject, cause) => {
    errors[subject.id] = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    console.log(`${subject.id}: FAILED ${errors[subject.id]}`);
  },
  (line) => console.log(line),
);
const command = redisClientsCommand('pnpm --filter @fencelock/bench bench:redis-clients', process.env, ['BENCH_SECONDS', 'BENCH_ROUNDS', 'BENCH_CYCLES', 'BENCH_REDIS_CLIENTS']);
const path = new URL('../bench-results/redis-clients.json', import.meta.url);
await mkdir(new URL('./', path), { recursive: true });
await writeFile(path, `${JSON.stringify({ startedAt, settings, results, errors }, null, 2)}\n`);
console.log(`\n${redisClientsMarkdown(results, command).join('\n')}\nwrote ${fileURLToPath(path)}`);
if (Object.keys(errors).length > 0) process.exitCode = 1;
