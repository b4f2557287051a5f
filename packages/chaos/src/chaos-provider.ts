/** The provider a chaos client process runs its workload on, built from a plain, serialisable config. */
import type { LockProvider } from '@fencelock/core';
import type { BackendName } from './backend-traits.js';

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

/**
 * Builds the provider a client process runs its workload on. The adapter is imported here, when
 * asked for: a client process starts with its own backend's adapter alone (loading all five from
 * source takes a second of CPU per process, and every scenario forks several).
 */
export async function createChaosProvider(config: ClientBackendConfig): Promise<LockProvider> {
  const hosts = config.ports.map((port) => `127.0.0.1:${port}`);
  switch (config.backend) {
    case 'redis': {
      const { createRedisLockProvider } = await import('@fencelock/redis');
      return createRedisLockProvider({
        connection: { host: '127.0.0.1', port: config.ports[0] ?? 0, maxRetriesPerRequest: 1, connectTimeout: 1_000 },
        keyPrefix: config.keyPrefix,
        defaultTtlMs: config.ttlMs,
        // A fifth of the TTL, so an extension hung on a paused server leaves room for the next one.
        requestTimeoutMs: Math.floor(config.ttlMs / 5),
        retry: RETRY,
      });
    }
    case 'redlock': {
      const { createRedlockLockProvider } = await import('@fencelock/redlock');
      return createRedlockLockProvider({
        masters: config.ports.map((port) => `redis://127.0.0.1:${port}`),
        keyPrefix: config.keyPrefix,
        defaultTtlMs: config.ttlMs,
        retry: RETRY,
      });
    }
    case 'etcd': {
      const { createEtcdLockProvider } = await import('@fencelock/etcd');
      return createEtcdLockProvider({
        connection: { hosts: hosts.map((host) => `http://${host}`) },
        keyPrefix: config.keyPrefix,
        sessionTtlMs: config.ttlMs,
        // A fifth of the session TTL: a keepalive hung on a paused member leaves room for the next one.
        requestTimeoutMs: Math.floor(config.ttlMs / 5),
        recheckIntervalMs: 1_000,
      });
    }
    case 'zookeeper': {
      const { createZooKeeperLockProvider } = await import('@fencelock/zookeeper');
      return createZooKeeperLockProvider({
        connectionString: hosts.join(','),
        sessionTimeoutMs: config.ttlMs,
        root: `/${config.keyPrefix.replace(/[^A-Za-z0-9_-]/g, '_')}`,
      });
    }
    case 'postgres': {
      const { createPostgresLockProvider } = await import('@fencelock/postgres');
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
}
