/**
 * Addresses of the shared topology (`infra up`), from FENCELOCK_* environment variables with
 * loopback defaults. Tests read these to connect; `infra run` exports them to the command.
 */
import { assertLoopbackHost } from './loopback.js';

/** The services of the shared topology. */
export type ServiceName = 'redis' | 'redlock' | 'redisCluster' | 'zookeeper' | 'etcd' | 'postgres';

/** Every service, in the order tables list them. */
export const SERVICE_NAMES: readonly ServiceName[] = ['redis', 'redlock', 'redisCluster', 'zookeeper', 'etcd', 'postgres'];

/** The environment variable that overrides each service's addresses. */
export const TOPOLOGY_ENV: Readonly<Record<ServiceName, string>> = {
  redis: 'FENCELOCK_REDIS_URL',
  redlock: 'FENCELOCK_REDLOCK_URLS',
  redisCluster: 'FENCELOCK_REDIS_CLUSTER_URLS',
  zookeeper: 'FENCELOCK_ZK_HOSTS',
  etcd: 'FENCELOCK_ETCD_ENDPOINTS',
  postgres: 'FENCELOCK_POSTGRES_URL',
};

/** The defaults (the ports in DESIGN.md). */
export const DEFAULT_TOPOLOGY_ENV: Readonly<Record<ServiceName, string>> = {
  redis: 'redis://127.0.0.1:6379',
  redlock: [7001, 7002, 7003, 7004, 7005].map((p) => `redis://127.0.0.1:${p}`).join(','),
  redisCluster: [7101, 7102, 7103].map((p) => `redis://127.0.0.1:${p}`).join(','),
  zookeeper: '127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183',
  etcd: 'http://127.0.0.1:2379,http://127.0.0.1:22379,http://127.0.0.1:32379',
  // Not 5432: installing Debian's postgresql on a machine with systemd starts its own cluster there.
  postgres: 'postgres://postgres@127.0.0.1:15432/postgres',
};

/** A host and port on loopback. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** The shared topology's addresses. */
export interface Topology {
  /** Single Redis, e.g. `redis://127.0.0.1:6379`. */
  readonly redisUrl: string;
  /** Independent Redis masters for Redlock (default five, 7001–7005). */
  readonly redlockUrls: readonly string[];
  /** Masters of the Redis Cluster (default three, 7101–7103, cluster-enabled). */
  readonly redisClusterUrls: readonly string[];
  /** ZooKeeper connection string as given (may end in a chroot such as `/app`). */
  readonly zkConnectionString: string;
  /** ZooKeeper servers as `host:port`, without chroot. */
  readonly zkHosts: readonly string[];
  /** etcd client endpoints, e.g. `http://127.0.0.1:2379`. */
  readonly etcdEndpoints: readonly string[];
  /**
   * PostgreSQL connection URL for guarded-write examples, e.g. `postgres://postgres@127.0.0.1:15432/postgres`
   * (user `postgres`, trust authentication on loopback, database `postgres`).
   */
  readonly postgresUrl: string;
  /** Host and port of every server, per service, in the order above. */
  readonly servers: Readonly<Record<ServiceName, readonly HostPort[]>>;
  /** Which services were set through their environment variable (non-empty) rather than defaulted. */
  readonly fromEnv: Readonly<Record<ServiceName, boolean>>;
}

/** Environment variables as {@link topology} reads them. */
export type TopologyEnv = Readonly<Record<string, string | undefined>>;

/**
 * Reads the shared topology from `env` (default `process.env`).
 *
 * @throws RangeError naming the variable when an address is malformed, duplicated, or not on
 * loopback (test-infra never talks to another host).
 */
export function topology(env: TopologyEnv = process.env): Topology {
  const raw = (name: ServiceName): string => {
    const value = env[TOPOLOGY_ENV[name]]?.trim();
    return value ? value : DEFAULT_TOPOLOGY_ENV[name];
  };
  const fromEnv = Object.fromEntries(
    SERVICE_NAMES.map((name) => [name, Boolean(env[TOPOLOGY_ENV[name]]?.trim())]),
  ) as Record<ServiceName, boolean>;

  const redis = parseUrlList(raw('redis'), TOPOLOGY_ENV.redis, ['redis:'], 6379);
  if (redis.length !== 1) throw new RangeError(`${TOPOLOGY_ENV.redis} must be one URL, got ${redis.length}`);
  const redlock = parseUrlList(raw('redlock'), TOPOLOGY_ENV.redlock, ['redis:'], 6379);
  const redisCluster = parseUrlList(raw('redisCluster'), TOPOLOGY_ENV.redisCluster, ['redis:'], 6379);
  const zk = parseZooKeeperHosts(raw('zookeeper'));
  const etcd = parseUrlList(raw('etcd'), TOPOLOGY_ENV.etcd, ['http:', 'https:'], 2379);
  const postgres = parseUrlList(raw('postgres'), TOPOLOGY_ENV.postgres, ['postgres:', 'postgresql:'], 5432);
  if (postgres.length !== 1) throw new RangeError(`${TOPOLOGY_ENV.postgres} must be one URL, got ${postgres.length}`);

  return {
    redisUrl: redis[0]?.url ?? '',
    redlockUrls: redlock.map((e) => e.url),
    redisClusterUrls: redisCluster.map((e) => e.url),
    zkConnectionString: raw('zookeeper'),
    zkHosts: zk.map((e) => `${e.host}:${e.port}`),
    etcdEndpoints: etcd.map((e) => e.url),
    postgresUrl: postgres[0]?.url ?? '',
    servers: {
      redis: redis.map(hostPort),
      redlock: redlock.map(hostPort),
      redisCluster: redisCluster.map(hostPort),
      zookeeper: zk,
      etcd: etcd.map(hostPort),
      postgres: postgres.map(hostPort),
    },
    fromEnv,
  };
}

/** The FENCELOCK_* variables that describe `t`, for a child process's environment. */
export function topologyEnv(t: Topology): Record<string, string> {
  return {
    [TOPOLOGY_ENV.redis]: t.redisUrl,
    [TOPOLOGY_ENV.redlock]: t.redlockUrls.join(','),
    [TOPOLOGY_ENV.redisCluster]: t.redisClusterUrls.join(','),
    [TOPOLOGY_ENV.zookeeper]: t.zkConnectionString,
    [TOPOLOGY_ENV.etcd]: t.etcdEndpoints.join(','),
    [TOPOLOGY_ENV.postgres]: t.postgresUrl,
  };
}

interface ParsedUrl extends HostPort {
  /** Normalised (no trailing slash). */
  readonly url: string;
}

function hostPort(entry: HostPort): HostPort {
  return { host: entry.host, port: entry.port };
}

function splitList(value: string, variable: string): string[] {
  const items = value.split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new RangeError(`${variable} has an empty entry: ${JSON.stringify(value)}`);
  return items;
}

function parseUrlList(value: string, variable: string, protocols: readonly string[], defaultPort: number): ParsedUrl[] {
  const parsed = splitList(value, variable).map((item) => {
    let url: URL;
    try {
      url = new URL(item);
    } catch {
      throw new RangeError(`${variable}: ${JSON.stringify(item)} is not a URL (expected e.g. ${protocols[0]}//127.0.0.1:${defaultPort})`);
    }
    if (!protocols.includes(url.protocol)) {
      throw new RangeError(`${variable}: ${JSON.stringify(item)} must use ${protocols.join(' or ')}`);
    }
    assertLoopbackHost(url.hostname, variable);
    const port = url.port ? Number(url.port) : defaultPort;
    return { host: url.hostname, port, url: item.replace(/\/+$/, '') };
  });
  rejectDuplicates(parsed, variable);
  return parsed;
}

function parseZooKeeperHosts(value: string): HostPort[] {
  const variable = TOPOLOGY_ENV.zookeeper;
  // A chroot may follow the last server: "h1:2181,h2:2181/app".
  const slash = value.indexOf('/');
  const servers = slash >= 0 ? value.slice(0, slash) : value;
  const parsed = splitList(servers, variable).map((item) => {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(item);
    if (!match?.[1]) throw new RangeError(`${variable}: ${JSON.stringify(item)} is not host:port`);
    assertLoopbackHost(match[1], variable);
    const port = match[2] ? Number(match[2]) : 2181;
    return { host: match[1], port };
  });
  for (const entry of parsed) {
    if (!Number.isInteger(entry.port) || entry.port < 1 || entry.port > 65_535) {
      throw new RangeError(`${variable}: port ${entry.port} is out of range`);
    }
  }
  rejectDuplicates(parsed, variable);
  return parsed;
}

/** The same server twice would, e.g., count twice toward a Redlock majority. */
function rejectDuplicates(entries: readonly HostPort[], variable: string): void {
  const seen = new Set<string>();
  for (const entry of entries) {
    const key = `${entry.host.toLowerCase()}:${entry.port}`;
    if (seen.has(key)) throw new RangeError(`${variable} lists ${key} twice`);
    seen.add(key);
  }
}
