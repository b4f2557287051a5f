import { MemoryLockProvider, MemoryLockStore, type LockProvider } from '@fencelock/core';

/** How the demo builds one provider (one client) per worker for a backend. */
export interface DemoBackend {
  /** Makes a new provider, as a separate worker process would have. */
  readonly connect: () => Promise<LockProvider>;
  /** How long a lock outlives a silent holder, in ms (the TTL, or the session timeout). */
  readonly lifetimeMs: number;
  /** Acquire options that set that lifetime, where the backend takes it per lock. */
  readonly lockOptions: { ttlMs?: number };
}

// The addresses of `pnpm infra:up`, overridable as in the test suite.
const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const list = (value: string): string[] => value.split(',').map((entry) => entry.trim());
const LIFETIME_MS = 2_000;

/** The backends the demo can run on, by name. Adapters are loaded only when asked for. */
export const DEMO_BACKENDS: Record<string, () => Promise<DemoBackend>> = {
  memory: async () => {
    const store = new MemoryLockStore();
    return { connect: async () => new MemoryLockProvider({ store }), lifetimeMs: LIFETIME_MS, lockOptions: { ttlMs: LIFETIME_MS } };
  },
  redis: async () => {
    const { createRedisLockProvider } = await import('@fencelock/redis');
    const url = env('FENCELOCK_REDIS_URL', 'redis://127.0.0.1:6379');
    return { connect: async () => createRedisLockProvider({ connection: url }), lifetimeMs: LIFETIME_MS, lockOptions: { ttlMs: LIFETIME_MS } };
  },
  redlock: async () => {
    const { createRedlockLockProvider } = await import('@fencelock/redlock');
    const defaults = [7001, 7002, 7003, 7004, 7005].map((port) => `redis://127.0.0.1:${port}`).join(',');
    const masters = list(env('FENCELOCK_REDLOCK_URLS', defaults));
    return { connect: async () => createRedlockLockProvider({ masters }), lifetimeMs: LIFETIME_MS, lockOptions: { ttlMs: LIFETIME_MS } };
  },
  zookeeper: async () => {
    const { createZooKeeperLockProvider } = await import('@fencelock/zookeeper');
    const connectionString = env('FENCELOCK_ZK_HOSTS', '127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183');
    return {
      connect: async () => createZooKeeperLockProvider({ connectionString, sessionTimeoutMs: LIFETIME_MS }),
      lifetimeMs: LIFETIME_MS,
      lockOptions: {},
    };
  },
  etcd: async () => {
    const { createEtcdLockProvider } = await import('@fencelock/etcd');
    const hosts = list(env('FENCELOCK_ETCD_ENDPOINTS', 'http://127.0.0.1:2379,http://127.0.0.1:22379,http://127.0.0.1:32379'));
    return { connect: async () => createEtcdLockProvider({ connection: { hosts }, sessionTtlMs: LIFETIME_MS }), lifetimeMs: LIFETIME_MS, lockOptions: {} };
  },
};
