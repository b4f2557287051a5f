/**
 * redis-shared's client seam (`LockClient`) over every supported client library, major version and
 * protocol, on the single server and on the cluster: the replies the lock scripts give (nil,
 * integers, strings, arrays) come out the same under RESP2 and RESP3, a flushed script cache is
 * recovered from, keyed commands reach their slot, and pub/sub messages (channel and pattern) arrive
 * on the subscriber. The lock logic above the seam is checked by the conformance suites.
 */
import { within } from '@fencelock/conformance';
import { ScriptRunner, isSupportedClient, lockClientOf, redisKeyConflict, type LockClient, type SupportedRedisClient } from '@fencelock/redis-shared';
import { topology } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { GlideClient } from '@valkey/valkey-glide';
import { createClient } from 'redis';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createRedisLockProvider, type RedisLockProvider } from '../src/index.js';
import { CLIENT_FLAVOURS } from './clients.js';
import { clusterNode, dropClient } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();
const opened: SupportedRedisClient[] = [];
afterAll(() => {
  for (const client of opened.splice(0)) dropClient(client);
});

const REPLIES = { lua: "if ARGV[1] == 'nil' then return false elseif ARGV[1] == 'int' then return 7 elseif ARGV[1] == 'str' then return KEYS[1] else return {1, 'two', {3}} end" };

/** Resolves once `client` is ready (bounded). */
async function ready(client: LockClient): Promise<void> {
  if (client.status === 'ready') return;
  await within(
    new Promise<void>((resolve) => {
      const stop = client.onStatus((status) => {
        if (status !== 'ready') return;
        stop();
        resolve();
      });
      if (client.status === 'ready') {
        stop();
        resolve();
      }
    }),
    5_000,
    'the client to be ready',
  );
}

async function run(runner: ScriptRunner, args: (string | number)[]): Promise<unknown> {
  try {
    return await runner.run(args);
  } catch (error) {
    return runner.runAgain(error, args);
  }
}

for (const flavour of Object.values(CLIENT_FLAVOURS)) {
  for (const topologyName of ['single server', 'cluster'] as const) {
    describe(`${flavour.name}, ${topologyName}`, () => {
      const open = async (): Promise<{ raw: SupportedRedisClient; client: LockClient }> => {
        const raw = topologyName === 'cluster' ? await flavour.cluster(redisClusterUrls) : await flavour.standalone(redisUrl);
        opened.push(raw);
        expect(isSupportedClient(raw)).toBe(true);
        const client = lockClientOf(raw, 'client');
        await ready(client);
        return { raw, client };
      };

      it('gives the scripts replies in one shape under either protocol, and recovers from a flushed script cache', async () => {
        const { client } = await open();
        expect(client.isCluster).toBe(topologyName === 'cluster');
        expect(client.family).toBe(flavour.name.startsWith('node-redis') ? 'node-redis' : flavour.name.startsWith('Valkey GLIDE') ? 'glide' : 'ioredis');
        const runner = new ScriptRunner(client, REPLIES);
        const key = `seam:${randomUUID()}`;
        expect(await run(runner, [1, key, 'nil'])).toBeNull();
        expect(await run(runner, [1, key, 'int'])).toBe(7);
        expect(await run(runner, [1, key, 'str'])).toBe(key);
        expect(await run(runner, [1, key, 'array'])).toEqual([1, 'two', [3]]);
        // A restarted or flushed server: NOSCRIPT, then the script itself again.
        await Promise.all(client.masters().map((server) => server.command(['SCRIPT', 'FLUSH'])));
        expect(await run(runner, [1, key, 'str'])).toBe(key);
      });

      it("passes a script's WRONGTYPE on in the server's words, which the adapters report as LOCK_KEY_CONFLICT", async () => {
        const { client } = await open();
        const key = `seam:wrongtype:${randomUUID()}`;
        await client.command(['HSET', key, 'app', 'data'], key);
        const runner = new ScriptRunner(client, { lua: "return redis.call('GET', KEYS[1])" });
        const error = await run(runner, [1, key]).then(
          () => undefined,
          (failure: unknown) => failure,
        );
        expect(redisKeyConflict(error)).toMatch(/^WRONGTYPE/);
        expect(Number(await client.command(['DEL', key], key))).toBe(1);
      });

      it('routes keyed commands by their key, reads the server clock, names the masters', async () => {
        const { client } = await open();
        const keys = Array.from({ length: 6 }, (_, i) => `seam:${i}:${randomUUID()}`);
        for (const key of keys) expect(await client.command(['SET', key, key, 'PX', '10000'], key)).toBe('OK');
        for (const key of keys) expect(await client.command(['GET', key], key)).toBe(key);
        for (const key of keys) expect(Number(await client.command(['DEL', key], key))).toBe(1);
        const [first, second] = [await client.time(), await client.time()];
        expect(typeof first).toBe('bigint');
        expect(second).toBeGreaterThanOrEqual(first);
        expect(client.masters().length).toBe(topologyName === 'cluster' ? redisClusterUrls.length : 1);
        if (topologyName === 'single server') {
          expect(String(client.endpoint?.port)).toBe(new URL(redisUrl).port);
          // The protocol the flavour names is the one its connection speaks.
          expect(String(await client.command(['CLIENT', 'INFO'], keys[0]!))).toMatch(new RegExp(`(^| )resp=${flavour.resp}( |$)`, 'm'));
        }
      });

      it('delivers channel and pattern messages on its own subscriber connection', async () => {
        const { client } = await open();
        const channel = `seam:channel:${randomUUID()}`;
        const messages: [string, string, string | undefined][] = [];
        let confirmed!: () => void;
        const subscribed = new Promise<void>((resolve) => {
          confirmed = resolve;
        });
        let heard!: () => void;
        const bothHeard = new Promise<void>((resolve) => {
          heard = resolve;
        });
        const subscriber = client.subscriber(
          { channels: [channel], patterns: [`${channel}:*`] },
          {
            message: (...message) => {
              messages.push(message);
              if (messages.length === 2) heard();
            },
            confirmed: () => confirmed(),
            lost: () => undefined,
          },
        );
        try {
          await within(subscribed, 5_000, 'the subscription');
          await client.command(['PUBLISH', channel, 'one'], channel);
          await client.command(['PUBLISH', `${channel}:x`, 'two'], `${channel}:x`);
          await within(bothHeard, 5_000, 'both messages');
          expect(messages).toEqual(
            expect.arrayContaining([
              [channel, 'one', undefined],
              [`${channel}:x`, 'two', `${channel}:*`],
            ]),
          );
        } finally {
          subscriber.close();
        }
      });
    });
  }
}

describe('a node-redis client nobody connected', () => {
  it('is connected by the provider, which then locks through it (and still never closes it)', async () => {
    const client = createClient({ url: redisUrl });
    client.on('error', () => undefined);
    opened.push(client);
    expect(client.isOpen).toBe(false);
    const provider = createRedisLockProvider({ client });
    // The provider's client has the type of the client given.
    expectTypeOf(provider.client).toEqualTypeOf<typeof client>();
    try {
      const lock = await provider.acquire(`seam:unconnected:${randomUUID()}`, { waitMs: 5_000 });
      expect(lock.fencingToken).toBeTypeOf('bigint');
      expect(await lock.release()).toBe(true);
    } finally {
      await provider.close();
    }
    expect(client.isOpen).toBe(true);
  });
});

describe('the provider over a Valkey GLIDE client', () => {
  it('keeps its type, and locks through it without closing it', async () => {
    const client = await GlideClient.createClient({ addresses: [clusterNode(redisUrl)] });
    opened.push(client);
    const provider = createRedisLockProvider({ client });
    expectTypeOf(provider.client).toEqualTypeOf<GlideClient>();
    // A provider that opened its own client: the union of the supported ones.
    expectTypeOf<RedisLockProvider['client']>().toEqualTypeOf<SupportedRedisClient>();
    try {
      const lock = await provider.acquire(`seam:glide:${randomUUID()}`, { waitMs: 5_000 });
      expect(await lock.release()).toBe(true);
    } finally {
      await provider.close();
    }
    expect(await client.customCommand(['PING'])).toBe('PONG');
  });
});

describe('what is not a supported client', () => {
  it('is refused with LOCK_INVALID_ARGUMENT naming what was passed', () => {
    class MemcachedClient {
      get(): void {}
    }
    for (const [value, named] of [
      [new MemcachedClient(), 'a MemcachedClient instance'],
      [{}, 'a plain object'],
      ['redis://127.0.0.1', 'a string'],
      [null, 'null'],
    ] as const) {
      expect(() => lockClientOf(value, 'options.client')).toThrowError(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', message: expect.stringContaining(named) }));
    }
  });
});
