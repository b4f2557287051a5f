/**
 * Every adapter the chaos suite drives, built in this one module (the adapters' option names may
 * still move; nothing else in the package imports an adapter). A client process receives a plain,
 * serialisable {@link ClientBackendConfig} over `fork` and turns it into a provider here.
 */
import type { LockCapabilities, LockProvider } from '@fencelock/core';
import { createEtcdLockProvider, ETCD_CAPABILITIES } from '@fencelock/etcd';
import { createPostgresLockProvider, POSTGRES_CAPABILITIES } from '@fencelock/postgres';
import { createRedisLockProvider, REDIS_CAPABILITIES } from '@fencelock/redis';
import { createRedlockLockProvider, REDLOCK_CAPABILITIES } from '@fencelock/redlock';
import { createZooKeeperLockProvider, ZOOKEEPER_CAPABILITIES } from '@fencelock/zookeeper';

/** The backends, by the name used on the command line and in the table. */
export const BACKEND_NAMES = ['redis', 'etcd', 'zookeeper', 'redlock', 'postgres'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** True for a known backend name. */
export function isBackendName(value: string): value is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(value);
}

/** What the harness needs to know about a backend, beyond its adapter's capabilities. */
export interface BackendTraits {
  /** Locks live as long as a session or lease (etcd, ZooKeeper, PostgreSQL): no per-acquire `ttlMs`, no `autoExtend: false`. */
  readonly session: boolean;
  /** The lock TTL (or session timeout) the suite uses, ms. */
  readonly ttlMs: number;
  /** How many server processes the backend runs on. */
  readonly servers: number;
}

/** Per backend: TTLs of 2–3 s, as FAULTS.md's budget asks (etcd floors leases at 2 s; ZK sessions ≥ 2–3 s). */
export const BACKEND_TRAITS: Readonly<Record<BackendName, BackendTraits>> = {
  redis: { session: false, ttlMs: 2_000, servers: 1 },
  redlock: { session: false, ttlMs: 2_000, servers: 5 },
  etcd: { session: true, ttlMs: 2_000, servers: 3 },
  zookeeper: { session: true, ttlMs: 3_000, servers: 3 },
  postgres: { session: true, ttlMs: 2_000, servers: 1 },
};

/** What each adapter declares it does; the harness decides from it (semaphore rows), never from a list of names. */
export const BACKEND_CAPABILITIES: Readonly<Record<BackendName, LockCapabilities>> = {
  redis: REDIS_CAPABILITIES,
  redlock: REDLOCK_CAPABILITIES,
  etcd: ETCD_CAPABILITIES,
  zookeeper: ZOOKEEPER_CAPABILITIES,
  postgres: POSTGRES_CAPABILITIES,
};

/** True when `backend`'s adapter declares counting semaphores. */
export function hasSemaphores(backend: BackendName): boolean {
  return BACKEND_CAPABILITIES[backend].semaphore !== 'none';
}

/** What a client process needs to build its provider: addresses (proxied or direct) and the run's key space. */
export interface ClientBackendConfig {
  readonly backend: BackendName;
  /** One client port per server, in server order (a proxy's port when the run proxies this client). */
  readonly ports: readonly number[];
  /** Lock TTL / session timeout, ms. */
  readonly ttlMs: number;
  /** Unique per run, so runs sharing servers never see each other's keys. */
  readonly keyPrefix: string;
  /** The client's proc id, given to the server where it can name a connection (PostgreSQL's `application_name`). */
  readonly clientName?: string;
}

// Waiters re-poll at most every 100 ms (core's default is 500 ms): more contention per second of run.
const RETRY = { initialDelayMs: 10, maxDelayMs: 100, factor: 2 } as const;

/** Builds the provider a client process runs its workload on. */
export function createChaosProvider(config: ClientBackendConfig): LockProvider {
  const hosts = config.ports.map((port) => `127.0.0.1:${port}`);
  switch (config.backend) {
    case 'redis':
      return createRedisLockProvider({
        connection: { host: '127.0.0.1', port: config.ports[0] ?? 0, maxRetriesPerRequest: 1, connectTimeout: 1_000 },
        keyPrefix: config.keyPrefix,
        defaultTtlMs: config.ttlMs,
        // A fifth of the TTL, so an extension hung on a paused server leaves room for the next one.
        requestTimeoutMs: Math.floor(config.ttlMs / 5),
        retry: RETRY,
      });
    case 'redlock':
      return createRedlockLockProvider({
        masters: config.ports.map((port) => `redis://127.0.0.1:${port}`),
        keyPrefix: config.keyPrefix,
        defaultTtlMs: config.ttlMs,
        retry: RETRY,
      });
    case 'etcd':
      return createEtcdLockProvider({
        connection: { hosts: hosts.map((host) => `http://${host}`) },
        keyPrefix: config.keyPrefix,
        sessionTtlMs: config.ttlMs,
        // A fifth of the session TTL: a keepalive hung on a paused member leaves room for the next one.
        requestTimeoutMs: Math.floor(config.ttlMs / 5),
        recheckIntervalMs: 1_000,
      });
    case 'zookeeper':
      return createZooKeeperLockProvider({
        connectionString: hosts.join(','),
        sessionTimeoutMs: config.ttlMs,
        root: `/${config.keyPrefix.replace(/[^A-Za-z0-9_-]/g, '_')}`,
      });
    case 'postgres':
      return createPostgresLockProvider({
        // application_name: the nemesis finds a client's session by it (pg_terminate_backend).
        connection: {
          host: '127.0.0.1',
          port: config.ports[0] ?? 0,
          user: 'postgres',
          database: 'postgres',
          application_name: config.clientName ?? 'fencelock-chaos',
        },
        // Advisory lock ids are hashed from namespace + key: the run's prefix keeps runs apart.
        namespace: `fencelock:${config.keyPrefix}`,
        sessionTtlMs: config.ttlMs,
        // A fifth of the session TTL: a keepalive hung on a paused server leaves room for the next one.
        requestTimeoutMs: Math.floor(config.ttlMs / 5),
      });
  }
}

/** True when `backend`'s adapter declares leader election. */
export function hasElections(backend: BackendName): boolean {
  return BACKEND_CAPABILITIES[backend].election !== 'none';
}

/** What {@link scanLeftovers} looks at: lock keys, semaphore keys and election names of the run. */
export interface LeftoverScan {
  readonly locks?: readonly string[];
  readonly semaphores?: readonly string[];
  readonly elections?: readonly string[];
}

/**
 * The run's keys that someone still holds (L3), asked through a fresh provider of the same adapter
 * (`inspect`, `inspectSemaphore`, and `leader` for election names), so the check knows nothing of
 * any backend's key layout. Bounded to 10 s.
 */
export async function scanLeftovers(config: ClientBackendConfig, scan: LeftoverScan): Promise<string[]> {
  const { locks: keys = [], semaphores: semaphoreKeys = [], elections = [] } = scan;
  const provider = createChaosProvider(config);
  let timer: NodeJS.Timeout | undefined;
  try {
    const scan = (async () => {
      const held: string[] = [];
      for (const key of keys) {
        const info = await provider.inspect(key);
        if (info !== undefined && info.holders.length > 0) held.push(`${config.keyPrefix}${key} (${info.holders.map((holder) => holder.ownerId).join(', ')})`);
      }
      for (const key of semaphoreKeys) {
        const info = await provider.inspectSemaphore(key);
        if (info !== undefined && info.holders.length > 0) held.push(`semaphore ${config.keyPrefix}${key} (${info.holders.map((holder) => holder.ownerId).join(', ')})`);
      }
      for (const name of elections) {
        const leader = await provider.leader(name);
        if (leader !== undefined) held.push(`election ${config.keyPrefix}${name} (led by ${JSON.stringify(leader.value)})`);
      }
      return held;
    })();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('leftover scan took more than 10 s')), 10_000);
    });
    return await Promise.race([scan, timeout]);
  } finally {
    clearTimeout(timer);
    await provider.close().catch(() => undefined);
  }
}
