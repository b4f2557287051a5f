import type { LockCapabilities, LockProvider } from '@fencelock/core';
import type { RedisOptions } from 'ioredis';
import type { ClientConfig } from 'pg';
import type { Access } from './access.js';
import type { BackendConfig } from './backend-config.js';
import { formatDuration } from './duration.js';
import { UsageError } from './usage-error.js';

/**
 * Opens a provider for `config`. Adapters are loaded only when asked for, so `fencelock` starts fast
 * and a backend's client library is only loaded when that backend is used.
 *
 * `lifetimeMs` is how long a lock outlives a silent holder: the default TTL of each lock on the
 * per-lock backends (Redis, Redlock), the session lease or timeout on the session backends (etcd,
 * ZooKeeper, PostgreSQL). `undefined` keeps the adapter's default, as does a key layout setting (key prefix,
 * key encoding, root, naming) that `config` leaves out. The provider owns its client and closes it
 * in `close()`.
 *
 * `semaphorePermits`, when given, says a semaphore will be used with that many permits taken at
 * once: a backend without semaphores (or without multi-permit ones, for more than one) is refused
 * from its declared capabilities, before its client connects. So is one without elections when
 * `election` is true (`elect`, `inspect --election`).
 */
export async function connectProvider(config: BackendConfig, lifetimeMs: number | undefined, semaphorePermits?: number, election = false): Promise<LockProvider> {
  const check = (capabilities: LockCapabilities): void => checkCapabilities(config.backend, capabilities, lifetimeMs, semaphorePermits, election);
  switch (config.backend) {
    case 'redis': {
      const { createRedisLockProvider, REDIS_CAPABILITIES } = await import('@fencelock/redis');
      check(REDIS_CAPABILITIES);
      return createRedisLockProvider({ connection: redisConnection(config.url, config.access), keyPrefix: config.keyPrefix, ...(lifetimeMs === undefined ? {} : { defaultTtlMs: lifetimeMs }) });
    }
    case 'redlock': {
      const { createRedlockLockProvider, REDLOCK_CAPABILITIES } = await import('@fencelock/redlock');
      check(REDLOCK_CAPABILITIES);
      const { access } = config;
      return createRedlockLockProvider({ masters: config.urls.map((url) => redisConnection(url, access)), keyPrefix: config.keyPrefix, ...(lifetimeMs === undefined ? {} : { defaultTtlMs: lifetimeMs }) });
    }
    case 'etcd': {
      const { createEtcdLockProvider, ETCD_CAPABILITIES } = await import('@fencelock/etcd');
      check(ETCD_CAPABILITIES);
      const { access } = config;
      const tls = access?.tls;
      return createEtcdLockProvider({
        connection: {
          hosts: [...config.endpoints],
          ...(tls === undefined ? {} : { credentials: { rootCertificate: tls.ca, ...(tls.cert === undefined ? {} : { certChain: tls.cert, privateKey: tls.key }) } }),
          ...(access?.user === undefined ? {} : { auth: { username: access.user, password: access.password ?? '' } }),
        },
        keyPrefix: config.keyPrefix,
        keyEncoding: config.keyEncoding,
        ...(lifetimeMs === undefined ? {} : { sessionTtlMs: lifetimeMs }),
      });
    }
    case 'zookeeper': {
      const { createZooKeeperLockProvider, DEFAULT_SESSION_TIMEOUT_MS, ZOOKEEPER_CAPABILITIES } = await import('@fencelock/zookeeper');
      check(ZOOKEEPER_CAPABILITIES);
      const sessionTimeoutMs = lifetimeMs ?? DEFAULT_SESSION_TIMEOUT_MS;
      // The adapter bounds each request by a third of the granted session timeout (5 s at most).
      const { user, password } = config.access ?? {};
      return createZooKeeperLockProvider({
        connectionString: config.connectionString,
        sessionTimeoutMs,
        root: config.root,
        naming: config.naming,
        ...(user === undefined ? {} : { auth: { scheme: 'digest' as const, credentials: `${user}:${password ?? ''}` } }),
      });
    }
    case 'postgres': {
      const { createPostgresLockProvider, POSTGRES_CAPABILITIES } = await import('@fencelock/postgres');
      check(POSTGRES_CAPABILITIES);
      return createPostgresLockProvider({
        connection: postgresConnection(config.url, config.access),
        ...(config.namespace === undefined ? {} : { namespace: config.namespace }),
        ...(lifetimeMs === undefined ? {} : { sessionTtlMs: lifetimeMs }),
      });
    }
  }
}

/**
 * A Redis URL as ioredis options with the access settings: the URL's own user and password (if any)
 * give way to them. Without access settings, the URL itself.
 */
function redisConnection(url: string, access: Access | undefined): string | RedisOptions {
  if (access === undefined) return url;
  const parsed = new URL(url);
  const db = Number(parsed.pathname.replace(/^\//, '') || '0');
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: Number(parsed.port || 6379),
    ...(Number.isInteger(db) && db > 0 ? { db } : {}),
    // No ready check for a named user: it needs INFO, which a least-privilege lock user is not granted.
    ...(access.user === undefined ? {} : { username: access.user, password: access.password, enableReadyCheck: false }),
    ...(access.tls === undefined ? {} : { tls: { ca: access.tls.ca, ...(access.tls.cert === undefined ? {} : { cert: access.tls.cert, key: access.tls.key }) } }),
  };
}

/**
 * A PostgreSQL URL as pg settings with the access settings. Not pg's `connectionString`: what it
 * parses from the URL replaces the settings given beside it, user and TLS included.
 */
function postgresConnection(url: string, access: Access | undefined): string | ClientConfig {
  if (access === undefined) return url;
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: Number(parsed.port || 5432),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'postgres',
    ...(parsed.username === '' ? {} : { user: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) }),
    ...(access.user === undefined ? {} : { user: access.user, password: access.password }),
    ...(access.tls === undefined ? {} : { ssl: { ca: access.tls.ca, ...(access.tls.cert === undefined ? {} : { cert: access.tls.cert, key: access.tls.key }) } }),
  };
}

/**
 * What the backend declares it cannot do is a usage error, said before the client connects: `--ttl`
 * below what it honours, a semaphore where it has none, several permits at once where it takes one,
 * an election where it has none. Exported for the tests: no backend the CLI offers lacks elections.
 */
export function checkCapabilities(backend: BackendConfig['backend'], capabilities: LockCapabilities, lifetimeMs: number | undefined, semaphorePermits: number | undefined, election: boolean): void {
  if (lifetimeMs !== undefined && lifetimeMs < capabilities.minTtlMs) {
    throw new UsageError(`--ttl must be at least ${formatDuration(capabilities.minTtlMs)} on this backend`, election ? 'elect' : 'hold');
  }
  if (election && capabilities.election === 'none') {
    throw new UsageError(`the ${backend} backend has no leader elections (LOCK_UNSUPPORTED); choose a backend that has them with --backend`);
  }
  if (semaphorePermits === undefined) return;
  if (capabilities.semaphore === 'none') {
    throw new UsageError(`the ${backend} backend has no counting semaphores (LOCK_UNSUPPORTED); choose a backend that has them with --backend`);
  }
  if (semaphorePermits > 1 && capabilities.semaphore !== 'multi-permit') {
    throw new UsageError(`the ${backend} backend takes one semaphore permit at a time (LOCK_UNSUPPORTED); drop --take or give --take 1`, 'hold');
  }
}

/** How long `close()` may take before fencelock exits anyway, in ms (the backend is then unreachable). */
export const CLOSE_TIMEOUT_MS = 5_000;

/**
 * Closes a provider, waiting at most {@link CLOSE_TIMEOUT_MS}: with an unreachable server a close
 * can hang, and a locked-out user must still get their prompt back (locks left behind expire).
 */
export async function closeProvider(provider: LockProvider | undefined): Promise<void> {
  if (provider === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
    timer.unref();
  });
  try {
    await Promise.race([provider.close().catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
