/**
 * The protocol twins (`src/subjects-protocol.ts`) must send what `@fencelock/redis` and
 * `@fencelock/redlock` send, or their ratios would split the gap to the raw loop wrongly: provider and
 * twin are watched through `MONITOR`, and their script calls compared with the owner ids, keys and line
 * tags named alike.
 */
import { randomUUID } from 'node:crypto';
import { createRedisLockProvider } from '@fencelock/redis';
import type { Release } from '../src/subjects.js';
import { redisLockKeys } from '../../redis/src/redis-keys.js';
import { createRedlockLockProvider } from '@fencelock/redlock';
import { scriptSha } from '@fencelock/redis-shared';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sharedAddresses } from '../src/bench-servers.js';
import { BENCH_KEY_PREFIX, redisHandoffTwinSession, redisProtocolTwinSession, redlockProtocolTwinSession } from '../src/subjects-protocol.js';
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
    .replaceAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'OWNER')
    .replace(/^[A-Za-z0-9_-]{12}$/, 'TAG'))];
}

/** What one acquire that may wait and its release send, from a provider (its steady-state cycle) and from its twin. */
async function compare(
  url: string,
  cycleOfProvider: (key: string) => Promise<unknown>,
  cycleOfTwin: (key: string) => Promise<unknown>,
): Promise<{ provider: string[][]; twin: string[][] }> {
  const admin = new Redis(url);
  const monitor = await admin.monitor();
  try {
    const providerKey = `twin-provider-${randomUUID()}`;
    const twinKey = `twin-twin-${randomUUID()}`;
    // Three cycles of the provider, the last compared. Its steady state is EVALSHA, but a Redlock round
    // goes on at a majority, so a slow master may still get the script itself: calls are compared by SHA.
    const fromProvider = watch(monitor, providerKey, 6);
    for (let i = 0; i < 3; i++) await cycleOfProvider(providerKey);
    const fromTwin = watch(monitor, twinKey, 2);
    await cycleOfTwin(twinKey);
    const [providerSent, twinSent] = await Promise.all([fromProvider, fromTwin]);
    expect(twinSent.map((args) => args[0]?.toLowerCase())).toEqual(['evalsha', 'evalsha']);
    return { provider: providerSent.slice(4).map((args) => normalized(args, providerKey)), twin: twinSent.map((args) => normalized(args, twinKey)) };
  } finally {
    monitor.disconnect();
    admin.disconnect();
  }
}

const options = { ttlMs: LOCK_TTL_MS, autoExtend: false, waitMs: 5_000 };

describe('the protocol twins', () => {
  it('of @fencelock/redis sends the same script calls as the provider on an acquire that may wait and its release', async () => {
    const { redisUrl } = sharedAddresses();
    const provider = createRedisLockProvider({ connection: redisUrl, keyPrefix: BENCH_KEY_PREFIX });
    const twin = await redisProtocolTwinSession(redisUrl, LOCK_TTL_MS);
    try {
      const sent = await compare(redisUrl, async (key) => (await provider.acquire(key, options)).release(), async (key) => (await twin.lock(key, 5_000))());
      expect(sent.twin).toEqual(sent.provider);
      // The comparison names what it must: the acquire's owner id and line tag, the release's owner id.
      expect(sent.provider[0]).toContain('OWNER');
      expect(sent.provider[0]).toContain('TAG');
      expect(sent.provider[1]).toContain('OWNER');
    } finally {
      await Promise.all([provider.close(), twin.close()]);
    }
  });

  it('of @fencelock/redis hand-offs sends what the provider sends when a release grants the lock to a waiter', async () => {
    const { redisUrl } = sharedAddresses();
    const admin = new Redis(redisUrl);
    const monitor = await admin.monitor();
    const [holder, waiter] = [createRedisLockProvider({ connection: redisUrl, keyPrefix: BENCH_KEY_PREFIX }), createRedisLockProvider({ connection: redisUrl, keyPrefix: BENCH_KEY_PREFIX })];
    const [twinHolder, twinWaiter] = [await redisHandoffTwinSession(redisUrl, LOCK_TTL_MS), await redisHandoffTwinSession(redisUrl, LOCK_TTL_MS)];
    // How many are registered in the line of `key`.
    const lineLength = (key: string): Promise<number> => admin.zcard(redisLockKeys(BENCH_KEY_PREFIX, key).waiters);
    /**
     * One hand-off: A holds, B waits (registered), A releases (granting B), B releases. A releases as
     * soon as B is in line: the provider's waiter would poll again if left waiting for long.
     */
    const handoff = async (key: string, lock: (who: 'a' | 'b') => Promise<Release>, inLine: () => Promise<unknown>): Promise<void> => {
      const releaseA = await lock('a');
      const registered = inLine();
      const waiting = lock('b');
      await registered;
      await releaseA();
      await (await waiting)();
    };
    // The provider says when an acquire has to wait: its attempt's reply, so it is registered by then.
    const providerInLine = (): Promise<unknown> =>
      new Promise((resolve) => {
        const off = waiter.on('contended', () => {
          off();
          resolve(undefined);
        });
      });
    const twinInLine = (key: string) => (): Promise<unknown> => expect.poll(() => lineLength(key), { timeout: 5_000 }).toBe(1);
    try {
      const providerKey = `twin-handoff-provider-${randomUUID()}`;
      const twinKey = `twin-handoff-twin-${randomUUID()}`;
      const viaProvider = (key: string) => async (who: 'a' | 'b'): Promise<Release> => {
        const handle = await (who === 'a' ? holder : waiter).acquire(key, options);
        return async () => {
          await handle.release();
        };
      };
      // The provider's steady state: its first wait opens its subscription (and tries again once it is confirmed).
      await handoff(`${providerKey}-warm-up`, viaProvider(`${providerKey}-warm-up`), providerInLine);
      const fromProvider = watch(monitor, providerKey, 4);
      await handoff(providerKey, viaProvider(providerKey), providerInLine);
      const fromTwin = watch(monitor, twinKey, 4);
      await handoff(twinKey, (who) => (who === 'a' ? twinHolder : twinWaiter).lock(twinKey, 5_000), twinInLine(twinKey));
      const [providerSent, twinSent] = await Promise.all([fromProvider, fromTwin]);
      const provider = providerSent.map((args) => normalized(args, providerKey));
      expect(twinSent.map((args) => normalized(args, twinKey))).toEqual(provider);
      // The waiter's acquire asked for a direct grant, and nothing was sent between the holder's release and the waiter's.
      expect(providerSent.map((args) => args[0]?.toLowerCase())).toEqual(['evalsha', 'evalsha', 'evalsha', 'evalsha']);
      expect(provider[1]).toContain('TAG');
      expect(provider[1]?.at(-1)).toMatch(/^1:\d+$/);
    } finally {
      monitor.disconnect();
      admin.disconnect();
      await Promise.all([holder.close(), waiter.close(), twinHolder.close(), twinWaiter.close()]);
    }
  });

  it('of @fencelock/redlock sends the same script calls to a master as the provider', async () => {
    const { redlockUrls } = sharedAddresses();
    const provider = createRedlockLockProvider({ masters: [...redlockUrls], keyPrefix: BENCH_KEY_PREFIX });
    const twin = await redlockProtocolTwinSession(redlockUrls, LOCK_TTL_MS);
    try {
      // Every master gets the same calls: the first one's are compared.
      const sent = await compare(redlockUrls[0] ?? '', async (key) => (await provider.acquire(key, options)).release(), async (key) => (await twin.lock(key, 5_000))());
      expect(sent.twin).toEqual(sent.provider);
      expect(sent.provider[0]).toContain('OWNER');
      expect(sent.provider[0]).toContain('TAG');
      expect(sent.provider[1]?.some((arg) => arg.endsWith(':OWNER'))).toBe(true);
    } finally {
      await Promise.all([provider.close(), twin.close()]);
    }
  });
});
