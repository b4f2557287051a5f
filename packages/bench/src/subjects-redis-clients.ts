/**
 * The per-client subjects: for each Redis client library `@fencelock/redis` accepts, fencelock
 * through that client beside the raw lock loop (SET NX PX + a Lua compare-and-delete, as
 * `redis/raw-ioredis` does) on a client of the same library, so that their ratio isolates
 * fencelock's own cost from the client's. Each session opens a client of its own and closes it.
 */
import { randomUUID } from 'node:crypto';
import { createRedisLockProvider, type SupportedRedisClient } from '@fencelock/redis';
import { GlideClient } from '@valkey/valkey-glide';
import { Redis as Ioredis5 } from 'ioredis';
import { Redis as Ioredis6 } from 'ioredis6';
import { Redis as Valkey } from 'iovalkey';
import { createClient as createNodeRedis6 } from 'redis';
import { createClient as createNodeRedis5 } from 'redis5';
import { LOCK_TTL_MS, RAW_RELEASE, type LockSession, type Subject } from './subjects.js';

/** One client library's connection, as both subjects of its pair use it. */
interface ClientConnection {
  readonly client: SupportedRedisClient;
  /** `SET key owner PX ttl NX`: whether it was set. */
  setNx(key: string, owner: string): Promise<boolean>;
  /** The compare-and-delete script by `EVAL`. */
  releaseIfOwner(key: string, owner: string): Promise<void>;
  close(): void;
}

/** One client library measured: its name in the tables, and how a connection to `url` is opened. */
export interface RedisClientLibrary {
  /** Short id, in subject ids (`redis-clients/<id>/…`) and for the filter. */
  readonly id: string;
  /** Library, major version and protocol, for the tables. */
  readonly label: string;
  open(url: string): Promise<ClientConnection>;
}

/** The fencelock subject and the raw subject of one library. */
export interface RedisClientPair {
  readonly library: RedisClientLibrary;
  readonly fencelock: Subject;
  readonly raw: Subject;
}

// ioredis and its fork: the same calls.
function ioredisConnection(client: Ioredis5 | Ioredis6 | Valkey): ClientConnection {
  return {
    client,
    setNx: async (key, owner) => (await client.set(key, owner, 'PX', LOCK_TTL_MS, 'NX')) === 'OK',
    releaseIfOwner: async (key, owner) => {
      await client.eval(RAW_RELEASE, 1, key, owner);
    },
    close: () => client.disconnect(),
  };
}

// node-redis 5 and 6: raw commands, the same on both majors and both protocols.
async function nodeRedisConnection(client: ReturnType<typeof createNodeRedis6> | ReturnType<typeof createNodeRedis5>): Promise<ClientConnection> {
  await client.connect();
  return {
    client,
    setNx: async (key, owner) => String(await client.sendCommand(['SET', key, owner, 'PX', String(LOCK_TTL_MS), 'NX'])) === 'OK',
    releaseIfOwner: async (key, owner) => {
      await client.sendCommand(['EVAL', RAW_RELEASE, '1', key, owner]);
    },
    close: () => client.destroy(),
  };
}

/** The libraries, in the order of the table. */
export const REDIS_CLIENT_LIBRARIES: readonly RedisClientLibrary[] = [
  { id: 'ioredis5', label: 'ioredis 5 (RESP2)', open: async (url) => ioredisConnection(new Ioredis5(url)) },
  { id: 'ioredis6', label: 'ioredis 6 (RESP3)', open: async (url) => ioredisConnection(new Ioredis6(url)) },
  { id: 'iovalkey', label: 'iovalkey 0.4 (RESP2)', open: async (url) => ioredisConnection(new Valkey(url)) },
  { id: 'node-redis5', label: 'node-redis 5 (RESP2)', open: (url) => nodeRedisConnection(createNodeRedis5({ url })) },
  { id: 'node-redis6', label: 'node-redis 6 (RESP3)', open: (url) => nodeRedisConnection(createNodeRedis6({ url })) },
  {
    id: 'glide',
    label: 'Valkey GLIDE 2 (RESP3)',
    open: async (url) => {
      const { hostname, port } = new URL(url);
      // GLIDE's request timeout (default 250 ms) raised to the provider's: a loaded machine is no broken link.
      const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }], requestTimeout: 2_000 });
      return {
        client,
        setNx: async (key, owner) => (await client.customCommand(['SET', key, owner, 'PX', String(LOCK_TTL_MS), 'NX'])) === 'OK',
        releaseIfOwner: async (key, owner) => {
          await client.customCommand(['EVAL', RAW_RELEASE, '1', key, owner]);
        },
        close: () => client.close(),
      };
    },
  },
];

/** fencelock over a connection of `library`: the same acquire options as `redis/fencelock` in the latency scenarios. */
async function fencelockSession(library: RedisClientLibrary, url: string): Promise<LockSession> {
  const connection = await library.open(url);
  const provider = createRedisLockProvider({ client: connection.client, keyPrefix: 'fencelock-bench:' });
  return {
    async lock(key, waitMs) {
      const handle = await provider.acquire(key, { ttlMs: LOCK_TTL_MS, autoExtend: false, waitMs });
      return async () => {
        await handle.release();
      };
    },
    close: async () => {
      await provider.close();
      connection.close();
    },
    onContended: (listener) => provider.on('contended', () => listener()),
  };
}

async function rawSession(library: RedisClientLibrary, url: string): Promise<LockSession> {
  const connection = await library.open(url);
  return {
    async lock(key) {
      const owner = randomUUID();
      if (!(await connection.setNx(key, owner))) throw new Error(`raw lock ${key} is held`);
      return () => connection.releaseIfOwner(key, owner);
    },
    close: async () => connection.close(),
  };
}

/**
 * For each library of {@link REDIS_CLIENT_LIBRARIES} whose id contains one of `only` (every one when
 * `only` is empty), its fencelock and raw subjects on the Redis at `redisUrl`.
 */
export function redisClientPairs(redisUrl: string, only: readonly string[] = []): RedisClientPair[] {
  return REDIS_CLIENT_LIBRARIES.filter((library) => only.length === 0 || only.some((part) => library.id.includes(part))).map((library) => ({
    library,
    fencelock: {
      id: `redis-clients/${library.id}/fencelock`,
      backend: 'redis',
      kind: 'fencelock',
      label: `@fencelock/redis via ${library.label}`,
      waits: true,
      open: () => fencelockSession(library, redisUrl),
    },
    raw: {
      id: `redis-clients/${library.id}/raw`,
      backend: 'redis',
      kind: 'raw',
      label: `raw SET NX PX + Lua release via ${library.label}`,
      waits: false,
      open: () => rawSession(library, redisUrl),
    },
  }));
}
