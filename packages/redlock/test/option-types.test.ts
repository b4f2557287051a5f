/**
 * The options of the masters the provider opens with ioredis are typed by our own declarations
 * (`RedisConnectionOptions`), so that a project without ioredis can compile against them. These
 * checks (run by `pnpm typecheck`, as this file is part of the project) hold them to two promises:
 * the option types of ioredis 5, ioredis 6 and iovalkey are accepted as they are, and the options
 * listed are typed. No client that is not a supported standalone one passes for options.
 */
import { GlideClusterClient } from '@valkey/valkey-glide';
import type { RedisOptions } from 'ioredis';
import type { RedisOptions as Ioredis6Options } from 'ioredis6';
import type { RedisOptions as IovalkeyOptions } from 'iovalkey';
import { createCluster } from 'redis';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { RedlockLockProviderOptions, RedlockMaster } from '../src/index.js';
import { resolveRedlockOptions } from '../src/options.js';

type RedisOptionsOption = NonNullable<RedlockLockProviderOptions['redisOptions']>;

describe('master option types', () => {
  it("accepts ioredis 5's, ioredis 6's and iovalkey's own option types as masters and redisOptions", () => {
    expectTypeOf<RedisOptions>().toExtend<RedlockMaster>();
    expectTypeOf<Ioredis6Options>().toExtend<RedlockMaster>();
    expectTypeOf<IovalkeyOptions>().toExtend<RedlockMaster>();
    expectTypeOf<RedisOptions>().toExtend<RedisOptionsOption>();
    expectTypeOf<Ioredis6Options>().toExtend<RedisOptionsOption>();
    expectTypeOf<IovalkeyOptions>().toExtend<RedisOptionsOption>();
  });

  it('types the options it lists, lets other ioredis options through, and takes no node-redis or GLIDE cluster client for options', () => {
    expectTypeOf({ host: '127.0.0.1', port: 6380, showFriendlyErrorStack: true }).toExtend<RedlockMaster>();
    expectTypeOf({ host: '127.0.0.1', port: '6380' }).not.toExtend<RedlockMaster>();
    expectTypeOf({ password: 1 }).not.toExtend<RedisOptionsOption>();
    expectTypeOf<ReturnType<typeof createCluster>>().not.toExtend<RedlockMaster>();
    expectTypeOf<GlideClusterClient>().not.toExtend<RedlockMaster>();
  });

  it('reads the endpoint of a master given as a value of ioredis RedisOptions type', () => {
    const master = (port: number): RedisOptions => ({ host: '127.0.0.1', port, connectTimeout: 1_000 });
    const resolved = resolveRedlockOptions({ masters: [master(6390), master(6391), master(6392)] });
    expect(resolved.masters.map((m) => m.endpoint)).toEqual(['127.0.0.1:6390', '127.0.0.1:6391', '127.0.0.1:6392']);
    expect(resolved.masters.every((m) => m.client === undefined)).toBe(true);
  });
});
