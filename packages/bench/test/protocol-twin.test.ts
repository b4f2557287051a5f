/**
 * The protocol twin (`src/subjects-protocol.ts`) must send what `@fencelock/redis` sends, or its
 * ratios would split the gap to the raw loop wrongly: both are watched through `MONITOR` on the
 * shared Redis, and their script calls compared with the owner ids, keys and line tags named alike.
 */
import { randomUUID } from 'node:crypto';
import { createRedisLockProvider } from '@fencelock/redis';
import { scriptSha } from '@fencelock/redis-shared';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedAddresses } from '../src/bench-servers.js';
import { BENCH_KEY_PREFIX, redisProtocolTwinSession } from '../src/subjects-protocol.js';
import { LOCK_TTL_MS } from '../src/subjects.js';

type Sent = readonly string[];

/** Resolves once `count` commands naming `key` were seen, or rejects after 10 s. */
function watch(monitor: Awaited<ReturnType<Redis['monitor']>>, key: string, count: number): Promise<Sent[]> {
  const seen: Sent[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`saw ${seen.length} of ${count} commands on ${key}`)), 10_000);
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      // Scripts' inner commands show up from "lua": the client's own commands only.
      if (source === 'lua' || !args.includes(BENCH_KEY_PREFIX + key)) return;
      seen.push(args);
      if (seen.length === count) {
        clearTimeout(timer);
        resolve(seen);
      }
    });
  });
}

/** A script call with what differs per call or per client named: the script by SHA, owner ids, the key and its slot's tag, line tags. */
function normalized(args: Sent, key: string): string[] {
  const [command = '', script = '', ...rest] = args;
  const sha = command.toLowerCase() === 'eval' ? scriptSha(script) : script;
  return [sha, ...rest.map((arg) => arg
    .replaceAll(BENCH_KEY_PREFIX + key, 'KEY')
    .replace(/^\{[0-9a-z]+\}fencelock:/, '{SLOT}fencelock:')
    .replace(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'OWNER')
    .replace(/^[A-Za-z0-9_-]{12}$/, 'TAG'))];
}

describe('the Redis protocol twin', () => {
  let monitor: Awaited<ReturnType<Redis['monitor']>>;
  let admin: Redis;

  beforeAll(async () => {
    admin = new Redis(sharedAddresses().redisUrl);
    monitor = await admin.monitor();
  });

  afterAll(async () => {
    monitor.disconnect();
    admin.disconnect();
  });

  it('sends the same script calls as @fencelock/redis on an acquire that may wait and its release', async () => {
    const { redisUrl } = sharedAddresses();
    const providerKey = `twin-provider-${randomUUID()}`;
    const twinKey = `twin-twin-${randomUUID()}`;

    // Two cycles of the provider: the second is its steady state (EVALSHA on a connection that ran the scripts).
    const fromProvider = watch(monitor, providerKey, 4);
    const provider = createRedisLockProvider({ connection: redisUrl, keyPrefix: BENCH_KEY_PREFIX });
    try {
      for (let i = 0; i < 2; i++) await (await provider.acquire(providerKey, { ttlMs: LOCK_TTL_MS, autoExtend: false, waitMs: 5_000 })).release();
    } finally {
      await provider.close();
    }
    const fromTwin = watch(monitor, twinKey, 2);
    const twin = await redisProtocolTwinSession(redisUrl, LOCK_TTL_MS);
    try {
      await (await twin.lock(twinKey, 5_000))();
    } finally {
      await twin.close();
    }

    const [providerSent, twinSent] = await Promise.all([fromProvider, fromTwin]);
    expect(providerSent.slice(2).map((args) => args[0]?.toLowerCase())).toEqual(['evalsha', 'evalsha']);
    expect(twinSent.map((args) => args[0]?.toLowerCase())).toEqual(['evalsha', 'evalsha']);
    const steady = providerSent.slice(2).map((args) => normalized(args, providerKey));
    expect(twinSent.map((args) => normalized(args, twinKey))).toEqual(steady);
    // The comparison names what it must: the acquire's owner id, ask and line tag, the release's owner id.
    expect(steady[0]).toContain('OWNER');
    expect(steady[0]).toContain('TAG');
    expect(steady[1]).toContain('OWNER');
  });
});
