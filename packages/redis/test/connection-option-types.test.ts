/**
 * The connection options the provider opens with ioredis are typed by our own declarations
 * (`RedisConnectionOptions`, `RedisClusterOptions`, `RedisClusterNode`), so that a project without
 * ioredis can compile against them. These checks (run by `pnpm typecheck`, as this file is part of
 * the project) hold them to two promises: the option types of ioredis 5, ioredis 6 and iovalkey are
 * accepted as they are, and the options listed are typed — a wrong type is an error, not `any`.
 * The run-time part opens a provider from a value of ioredis' own `RedisOptions` type.
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import type { ClusterNode, ClusterOptions, RedisOptions } from 'ioredis';
import type { ClusterOptions as Ioredis6ClusterOptions, RedisOptions as Ioredis6Options } from 'ioredis6';
import type { ClusterOptions as IovalkeyClusterOptions, RedisOptions as IovalkeyOptions } from 'iovalkey';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createRedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';

type Connection = NonNullable<RedisLockProviderOptions['connection']>;
type ClusterNodes = NonNullable<RedisLockProviderOptions['clusterNodes']>;
type Cluster = NonNullable<RedisLockProviderOptions['clusterOptions']>;

describe('connection option types', () => {
  it("accepts ioredis 5's, ioredis 6's and iovalkey's own option types", () => {
    expectTypeOf<RedisOptions>().toExtend<Connection>();
    expectTypeOf<Ioredis6Options>().toExtend<Connection>();
    expectTypeOf<IovalkeyOptions>().toExtend<Connection>();
    expectTypeOf<ClusterOptions>().toExtend<Cluster>();
    expectTypeOf<Ioredis6ClusterOptions>().toExtend<Cluster>();
    expectTypeOf<IovalkeyClusterOptions>().toExtend<Cluster>();
    expectTypeOf<ClusterNode[]>().toExtend<ClusterNodes>();
  });

  it('types the options it lists, and lets other ioredis options through', () => {
    // Written in place, with an option not listed (ioredis' showFriendlyErrorStack).
    expectTypeOf({ host: '127.0.0.1', port: 6379, tls: { servername: 'redis' }, showFriendlyErrorStack: true }).toExtend<Connection>();
    expectTypeOf({ redisOptions: { password: 'p', showFriendlyErrorStack: true }, scaleReads: 'slave' }).toExtend<Cluster>();
    expectTypeOf({ port: '6379' }).not.toExtend<Connection>();
    expectTypeOf({ db: '1', showFriendlyErrorStack: true }).not.toExtend<Connection>();
    expectTypeOf({ redisOptions: { password: 1 } }).not.toExtend<Cluster>();
    expectTypeOf<{ host: number }>().not.toExtend<ClusterNodes[number]>();
    // @ts-expect-error a port is a number
    const wrong: RedisLockProviderOptions = { connection: { host: '127.0.0.1', port: '6379' } };
    expect(wrong).toBeDefined();
  });

  it('opens a provider from a value of ioredis RedisOptions type', async () => {
    const url = new URL(topology().redisUrl);
    const connection: RedisOptions = { host: url.hostname, port: Number(url.port), connectionName: 'fencelock-option-types' };
    const locks = createRedisLockProvider({ connection });
    try {
      const lock = await locks.acquire(`option-types:${randomUUID()}`, { waitMs: 5_000 });
      expect(lock.fencingToken).toBeTypeOf('bigint');
      expect(await lock.release()).toBe(true);
    } finally {
      await locks.close();
    }
  });
});
