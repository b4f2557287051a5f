/**
 * The per-client section (fencelock beside the raw loop on each Redis client library), in a few
 * cycles per subject: every library's pair runs both scenarios, and the table shows them. The smoke
 * test of the other scenarios (smoke.test.ts) leaves these subjects out.
 */
import { topology } from '@fencelock/test-infra';
import { describe, expect, it } from 'vitest';
import { Logger } from '@valkey/valkey-glide';
import { redisClientsMarkdown, runRedisClients } from '../src/redis-clients.js';
import { REDIS_CLIENT_LIBRARIES, redisClientPairs } from '../src/subjects-redis-clients.js';

// GLIDE logs closed connections on the console.
Logger.setLoggerConfig('off');
const { redisUrl } = topology();

describe('per Redis client', () => {
  it('measures fencelock and the raw loop on every client library, uncontended and on 4 keys, and tabulates them', async () => {
    const failures: string[] = [];
    const pairs = redisClientPairs(redisUrl);
    expect(pairs.map((pair) => pair.library.id)).toEqual(REDIS_CLIENT_LIBRARIES.map((library) => library.id));
    const results = await runRedisClients(pairs, { maxCycles: 4, maxMs: 10_000, rounds: 2, keys: 4, warmupCycles: 1 }, (subject, error) => failures.push(`${subject.id}: ${String(error)}`));
    expect(failures).toEqual([]);
    expect(results).toHaveLength(REDIS_CLIENT_LIBRARIES.length);
    for (const result of results) {
      for (const scenario of [result.uncontended, result.parallelKeys]) {
        expect(scenario?.fencelock.opsPerSec).toBeGreaterThan(0);
        expect(scenario?.raw.opsPerSec).toBeGreaterThan(0);
        expect(scenario?.ratio).toBeGreaterThan(0);
        expect(scenario?.roundRange.max).toBeGreaterThanOrEqual(scenario?.roundRange.min ?? Number.NaN);
      }
      // One cycle per key per round: 2 rounds of 4 keys, at most the 4 cycles per key asked for.
      expect(result.parallelKeys?.fencelock.cycles).toBeLessThanOrEqual(16);
      expect(result.uncontended?.fencelock.cycles).toBeLessThanOrEqual(4);
    }
    const table = redisClientsMarkdown(results, 'pnpm bench').join('\n');
    for (const library of REDIS_CLIENT_LIBRARIES) expect(table).toContain(`| ${library.label} |`);
  }, 60_000);
});
