/**
 * Everything the bench measures, as data: each subject opens a session that can take and release
 * a lock on a key. The same registry serves the in-process uncontended loop and the contention
 * worker processes (which look a subject up by id), so both measure exactly the same code path.
 */
import { randomUUID } from 'node:crypto';
import { MemoryLockProvider, type LockProvider } from '@fencelock/core';
import type { HandoffPolicy } from '@fencelock/redis';
import { Redis } from 'ioredis';
import { createRequire } from 'node:module';
import type RedlockTyped from '../node_modules/redlock/dist/index.js';
import { sharedAddresses, type BenchAddresses } from './bench-servers.js';
import { asyncMutexSubject, benchMemoryStore } from './memory-subject.js';
import { postgresSubjects } from './subjects-postgres.js';
import { redisFairFloor } from './subjects-fair-floor.js';
import { BENCH_KEY_PREFIX, redisHandoffTwin, redisProtocolTwin, redlockProtocolTwin } from './subjects-protocol.js';

// Every adapter and peer library below is imported when a subject is opened, not with this module: a
// worker process (a contention client, an allocation pass) opens one subject, and loading all of them
// took it seconds of CPU before its first cycle.

/** node-redlock's class (its 5.0.0-beta.2 `exports` has no `types`: typed from its declarations by path). */
export async function loadRedlock(): Promise<typeof RedlockTyped> {
  // @ts-expect-error TS7016 (no types through `exports`); typed by the cast below.
  const module: { default: unknown } = await import('redlock');
  return module.default as typeof RedlockTyped;
}

/** The few node-zookeeper-client calls the raw ZooKeeper baseline makes (the package ships no types). */
interface ZkClient {
  connect(): void;
  close(): void;
  once(event: 'connected', listener: () => void): unknown;
  create(path: string, data: Buffer, mode: number, callback: (error: Error | null, path: string) => void): void;
  mkdirp(path: string, callback: (error: Error | null, path: string) => void): void;
  getChildren(path: string, callback: (error: Error | null, children: string[]) => void): void;
  remove(path: string, version: number, callback: (error: Error | null) => void): void;
}
interface ZkModule {
  createClient(connectionString: string, options?: { sessionTimeout?: number }): ZkClient;
  CreateMode: { EPHEMERAL_SEQUENTIAL: number };
}

/** The backend a subject runs on (`memory`: the in-process provider of `@fencelock/core`). */
export type Backend = 'redis' | 'redlock' | 'etcd' | 'zookeeper' | 'memory' | 'postgres';

/** fencelock itself, the raw client doing the minimal protocol, or a library users would otherwise pick. */
export type SubjectKind = 'fencelock' | 'raw' | 'peer';

/** Releases a lock taken by {@link LockSession.lock}. */
export type Release = () => Promise<void>;

/** One client's connection(s) to the backend. */
export interface LockSession {
  /** Takes `key`, waiting up to `waitMs` (raw subjects do not wait: they throw when the key is held). */
  lock(key: string, waitMs: number): Promise<Release>;
  /** Closes every client the session opened. */
  close(): Promise<void>;
  /**
   * fencelock sessions only: calls `listener` whenever an acquire found the key held and started to
   * wait (the provider's `contended` event); returns the unsubscribe function.
   */
  onContended?(listener: () => void): () => void;
}

/** A measured implementation. */
export interface Subject {
  /** Stable id, `<backend>/<name>`, used by worker processes and in the JSON. */
  readonly id: string;
  readonly backend: Backend;
  readonly kind: SubjectKind;
  /** Human-readable name for the tables. */
  readonly label: string;
  /** Whether `lock` waits for a held key (only those run the contention and waiters scenarios). */
  readonly waits: boolean;
  /** True when locks only exclude within one process (the memory provider: no multi-process contention). */
  readonly inProcess?: boolean;
  /**
   * True for a fencelock option that only changes who gets a contended lock (`handoff: 'barging'`):
   * measured in the contention scenarios only (every other scenario would measure the default again).
   */
  readonly contentionOnly?: boolean;
  /** Peers only: the npm package of the library measured (its allocations are its own, apart from the client's). */
  readonly package?: string;
  /**
   * Redis subjects: the `INFO commandstats` entries of the commands its client sends itself (a
   * script's inner commands excluded: their time is inside the script's), for the server time per
   * cycle. Default: `cmdstat_eval` and `cmdstat_evalsha`.
   */
  readonly redisCommands?: RegExp;
  open(): Promise<LockSession>;
  /**
   * fencelock subjects only: a provider whose session (etcd lease, ZooKeeper session) lasts
   * `sessionTtlMs`; per-lock providers ignore it (their TTL is given per acquire).
   */
  openProvider?(sessionTtlMs: number): Promise<LockProvider>;
}

/** Who a result is about: the fields every scenario's result starts with. */
export interface SubjectFields {
  /** The subject's id. */
  readonly subject: string;
  readonly backend: Backend;
  readonly kind: SubjectKind;
  readonly label: string;
}

/** The {@link SubjectFields} of `subject`. */
export function subjectFields(subject: Subject): SubjectFields {
  return { subject: subject.id, backend: subject.backend, kind: subject.kind, label: subject.label };
}

/** The commands a Redis subject's client sends itself, unless it says otherwise (see {@link Subject.redisCommands}). */
export const SCRIPT_COMMANDS = /^cmdstat_(eval|evalsha)$/;

/** TTL every subject acquires with, in ms (long enough never to expire mid-measurement). */
export const LOCK_TTL_MS = 10_000;

/** Session timeout / lease TTL of the session providers (etcd, ZooKeeper) in the latency scenarios, ms. */
export const SESSION_TTL_MS = 10_000;

function fencelockSession(provider: LockProvider): LockSession {
  return {
    async lock(key, waitMs) {
      // Session-expiry providers bind locks to the session (its timeout is set on the provider).
      // Per-lock providers: a TTL and no renewal timer, like the peers. Literals, not a spread of
      // shared defaults: V8 builds a spread object on a slow path (about a microsecond), which would
      // be charged to fencelock here.
      const perLock = provider.capabilities.expiry === 'per-lock';
      const handle = await provider.acquire(key, perLock ? { ttlMs: LOCK_TTL_MS, autoExtend: false, waitMs } : { waitMs });
      return async () => {
        await handle.release();
      };
    },
    close: () => provider.close(),
    onContended: (listener) => provider.on('contended', () => listener()),
  };
}

/** The raw baselines' release: a Lua compare-and-delete (the one redis-semaphore sends too). */
export const RAW_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/** node-redlock, with an `error` listener so a failed attempt is retried instead of crashing. */
async function nodeRedlockSession(urls: readonly string[]): Promise<LockSession> {
  const Redlock = await loadRedlock();
  const clients = urls.map((url) => new Redis(url));
  const redlock = new Redlock(clients, { retryJitter: 200 });
  redlock.on('error', () => undefined);
  return {
    async lock(key, waitMs) {
      // node-redlock retries every retryDelay (200 ms) ± jitter: bound the attempts by waitMs.
      const retryCount = Math.max(0, Math.ceil(waitMs / redlock.settings.retryDelay));
      const lock = await redlock.acquire([key], LOCK_TTL_MS, { retryCount });
      return async () => {
        await lock.release();
      };
    },
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
}

function rawZooKeeperSession(connectionString: string): Promise<LockSession> {
  const root = '/fencelock-bench-raw';
  const zookeeper = createRequire(import.meta.url)('node-zookeeper-client') as ZkModule;
  const client = zookeeper.createClient(connectionString, { sessionTimeout: 10_000 });
  const call = <T>(start: (done: (error: Error | null, result: T) => void) => void): Promise<T> =>
    new Promise<T>((resolve, reject) => start((error, result) => (error ? reject(error) : resolve(result))));
  const parents = new Set<string>();
  return new Promise<LockSession>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('ZooKeeper connect timed out')), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve({
        // The recipe: an ephemeral-sequential child, getChildren, lowest wins; release deletes it.
        async lock(key) {
          const parent = `${root}/${encodeURIComponent(key)}`;
          if (!parents.has(parent)) {
            await call<string>((done) => client.mkdirp(parent, done));
            parents.add(parent);
          }
          const path = await call<string>((done) => client.create(`${parent}/lock-`, Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done));
          const children = (await call<string[]>((done) => client.getChildren(parent, done))).sort();
          if (`${parent}/${children[0] ?? ''}` !== path) {
            await call<undefined>((done) => client.remove(path, -1, (error) => done(error, undefined)));
            throw new Error(`raw ZooKeeper lock ${key} is held`);
          }
          return () => call<undefined>((done) => client.remove(path, -1, (error) => done(error, undefined)));
        },
        async close() {
          for (const parent of parents) await call<undefined>((done) => client.remove(parent, -1, (error) => done(error, undefined))).catch(() => undefined);
          client.close();
        },
      });
    });
    client.connect();
  });
}

/** Every subject on the servers at `addresses` (default: the shared topology), fencelock first per backend. */
export function subjects(addresses: BenchAddresses = sharedAddresses()): readonly Subject[] {
  const { redisUrl, redlockUrls, zkConnectionString, etcdEndpoints } = addresses;
  const hosts = [...etcdEndpoints];
  const redis = async (handoff: HandoffPolicy = 'waiters-first'): Promise<LockProvider> => {
    const { createRedisLockProvider } = await import('@fencelock/redis');
    return createRedisLockProvider({ connection: redisUrl, keyPrefix: BENCH_KEY_PREFIX, handoff });
  };
  const redlock = async (handoff: HandoffPolicy = 'waiters-first'): Promise<LockProvider> => {
    const { createRedlockLockProvider } = await import('@fencelock/redlock');
    return createRedlockLockProvider({ masters: [...redlockUrls], keyPrefix: BENCH_KEY_PREFIX, handoff });
  };
  const etcd = async (sessionTtlMs: number): Promise<LockProvider> => {
    const { createEtcdLockProvider } = await import('@fencelock/etcd');
    return createEtcdLockProvider({ connection: { hosts }, keyPrefix: 'fencelock-bench/', sessionTtlMs });
  };
  const zooKeeper = async (sessionTimeoutMs: number): Promise<LockProvider> => {
    const { createZooKeeperLockProvider } = await import('@fencelock/zookeeper');
    return createZooKeeperLockProvider({ connectionString: zkConnectionString, sessionTimeoutMs, root: '/fencelock-bench' });
  };
  return [
    {
      id: 'redis/fencelock', backend: 'redis', kind: 'fencelock', label: '@fencelock/redis', waits: true,
      open: async () => fencelockSession(await redis()),
      openProvider: () => redis(),
    },
    {
      id: 'redis/fencelock-barging', backend: 'redis', kind: 'fencelock', label: "@fencelock/redis, handoff: 'barging'", waits: true, contentionOnly: true,
      open: async () => fencelockSession(await redis('barging')),
    },
    {
      id: 'redis/raw-ioredis', backend: 'redis', kind: 'raw', label: 'raw ioredis SET NX PX + Lua release', waits: false,
      redisCommands: /^cmdstat_(set|eval|evalsha)$/,
      open: async () => {
        const client = new Redis(redisUrl);
        return {
          async lock(key) {
            const owner = randomUUID();
            if ((await client.set(key, owner, 'PX', LOCK_TTL_MS, 'NX')) !== 'OK') throw new Error(`raw lock ${key} is held`);
            return async () => {
              await client.eval(RAW_RELEASE, 1, key, owner);
            };
          },
          close: async () => client.disconnect(),
        };
      },
    },
    redisProtocolTwin(redisUrl, LOCK_TTL_MS),
    {
      // The ceiling of any hand-off that serves waiters first: one token in a list, BLPOP to take it
      // and LPUSH to give it back. Redis serves blocked clients longest-waiting first, so every
      // release goes to a waiting process and nothing else is done (no TTL, owner check or token).
      id: 'redis/fifo-floor', backend: 'redis', kind: 'raw', label: 'raw ioredis BLPOP token queue (FIFO hand-off, no TTL)', waits: true, contentionOnly: true,
      open: async () => {
        const client = new Redis(redisUrl);
        const queues = new Set<string>();
        return {
          async lock(key, waitMs) {
            const queue = `${key}:fifo`;
            // The first client to use the key puts its one token in.
            if (!queues.has(queue)) {
              queues.add(queue);
              if ((await client.set(`${queue}:init`, '1', 'PX', 600_000, 'NX')) === 'OK') await client.lpush(queue, 'token');
            }
            if ((await client.blpop(queue, waitMs / 1000)) === null) throw new Error(`raw FIFO lock ${key}: not acquired within ${waitMs} ms`);
            return async () => {
              await client.lpush(queue, 'token');
            };
          },
          close: async () => {
            // The token's list would outlive the run: the last session to close finds it gone.
            if (queues.size > 0) await client.del(...[...queues].flatMap((queue) => [queue, `${queue}:init`]));
            client.disconnect();
          },
        };
      },
    },
    redisFairFloor(redisUrl, LOCK_TTL_MS),
    redisHandoffTwin(redisUrl, LOCK_TTL_MS),
    { id: 'redis/node-redlock', backend: 'redis', kind: 'peer', label: 'node-redlock, 1 Redis', waits: true, package: 'redlock', open: async () => nodeRedlockSession([redisUrl]) },
    {
      id: 'redis/redis-semaphore-mutex', backend: 'redis', kind: 'peer', label: 'redis-semaphore Mutex', waits: true, package: 'redis-semaphore',
      open: async () => {
        const { Mutex } = await import('redis-semaphore');
        const client = new Redis(redisUrl);
        return {
          async lock(key, waitMs) {
            const mutex = new Mutex(client, key, { lockTimeout: LOCK_TTL_MS, acquireTimeout: Math.max(1, waitMs), refreshInterval: 0 });
            await mutex.acquire();
            return () => mutex.release();
          },
          close: async () => client.disconnect(),
        };
      },
    },
    {
      id: 'redlock/fencelock', backend: 'redlock', kind: 'fencelock', label: `@fencelock/redlock, ${redlockUrls.length} masters`, waits: true,
      open: async () => fencelockSession(await redlock()),
      openProvider: () => redlock(),
    },
    {
      id: 'redlock/fencelock-barging', backend: 'redlock', kind: 'fencelock', label: `@fencelock/redlock, ${redlockUrls.length} masters, handoff: 'barging'`, waits: true, contentionOnly: true,
      open: async () => fencelockSession(await redlock('barging')),
    },
    redlockProtocolTwin(redlockUrls, LOCK_TTL_MS),
    { id: 'redlock/node-redlock', backend: 'redlock', kind: 'peer', label: `node-redlock, ${redlockUrls.length} masters`, waits: true, package: 'redlock', open: async () => nodeRedlockSession(redlockUrls) },
    {
      id: 'redlock/redis-semaphore-redlock-mutex', backend: 'redlock', kind: 'peer', label: `redis-semaphore RedlockMutex, ${redlockUrls.length} masters`, waits: true, package: 'redis-semaphore',
      open: async () => {
        const { RedlockMutex } = await import('redis-semaphore');
        const clients = redlockUrls.map((url) => new Redis(url));
        return {
          async lock(key, waitMs) {
            const mutex = new RedlockMutex(clients, key, { lockTimeout: LOCK_TTL_MS, acquireTimeout: Math.max(1, waitMs), refreshInterval: 0 });
            await mutex.acquire();
            return () => mutex.release();
          },
          close: async () => {
            for (const client of clients) client.disconnect();
          },
        };
      },
    },
    {
      id: 'etcd/fencelock', backend: 'etcd', kind: 'fencelock', label: '@fencelock/etcd', waits: true,
      open: async () => fencelockSession(await etcd(SESSION_TTL_MS)),
      openProvider: etcd,
    },
    {
      id: 'etcd/raw-txn', backend: 'etcd', kind: 'raw', label: 'raw etcd txn (create-if-absent put, compare-and-delete)', waits: false,
      open: async () => {
        const { Etcd3 } = await import('etcd3');
        const client = new Etcd3({ hosts });
        return {
          async lock(key) {
            const name = `fencelock-bench-raw/${key}`;
            const owner = randomUUID();
            const taken = await client.if(name, 'Create', '==', 0).then(client.put(name).value(owner)).commit();
            if (!taken.succeeded) throw new Error(`raw etcd lock ${key} is held`);
            return async () => {
              await client.if(name, 'Value', '==', owner).then(client.delete().key(name)).commit();
            };
          },
          close: async () => client.close(),
        };
      },
    },
    {
      id: 'etcd/protocol-twin', backend: 'etcd', kind: 'raw', label: "raw etcd3 sending @fencelock/etcd's requests (same transactions)", waits: false,
      open: async () => (await import('./subjects-protocol-etcd.js')).etcdProtocolTwinSession(hosts),
    },
    {
      id: 'etcd/etcd3-lock', backend: 'etcd', kind: 'peer', label: 'etcd3 client.lock() (lease per lock)', waits: false, package: 'etcd3',
      open: async () => {
        const { Etcd3 } = await import('etcd3');
        const client = new Etcd3({ hosts });
        return {
          async lock(key) {
            const lock = client.lock(`fencelock-bench-etcd3/${key}`).ttl(LOCK_TTL_MS / 1000);
            await lock.acquire();
            return async () => {
              await lock.release();
            };
          },
          close: async () => client.close(),
        };
      },
    },
    {
      id: 'zookeeper/fencelock', backend: 'zookeeper', kind: 'fencelock', label: '@fencelock/zookeeper', waits: true,
      open: async () => fencelockSession(await zooKeeper(SESSION_TTL_MS)),
      openProvider: zooKeeper,
    },
    {
      id: 'zookeeper/protocol-twin', backend: 'zookeeper', kind: 'raw', label: "raw node-zookeeper-client sending @fencelock/zookeeper's requests", waits: false,
      open: async () => (await import('./subjects-protocol-zookeeper.js')).zooKeeperProtocolTwinSession(zkConnectionString),
    },
    { id: 'zookeeper/raw-recipe', backend: 'zookeeper', kind: 'raw', label: 'raw ephemeral-sequential recipe (node-zookeeper-client)', waits: false, open: () => rawZooKeeperSession(zkConnectionString) },
    {
      // What core itself costs per lock, with no network in the way (beside a plain in-process mutex).
      id: 'memory/fencelock', backend: 'memory', kind: 'fencelock', label: '@fencelock/core MemoryLockProvider', waits: true, inProcess: true,
      open: async () => fencelockSession(new MemoryLockProvider({ store: benchMemoryStore })),
      openProvider: async () => new MemoryLockProvider({ store: benchMemoryStore }),
    },
    asyncMutexSubject(),
    ...(addresses.postgresUrl === undefined ? [] : postgresSubjects(addresses.postgresUrl, fencelockSession, SESSION_TTL_MS)),
  ];
}

/** The subject with this id on the shared topology; throws for an unknown id. */
export function subjectById(id: string): Subject {
  const found = subjects().find((subject) => subject.id === id);
  if (found === undefined) throw new Error(`unknown bench subject ${id}`);
  return found;
}
