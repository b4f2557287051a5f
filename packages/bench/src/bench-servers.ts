/**
 * Where the bench runs: the shared test-infra topology, or dedicated servers started for the bench.
 * Server-side counts (wake-ups per release, round trips per second) run on dedicated servers, so
 * that other clients of the shared servers (tests running on the same machine) do not show up in
 * the counters; everything else runs on the shared topology.
 */
import {
  startEtcdCluster,
  startRedisMasters,
  startRedisServer,
  startZooKeeperEnsemble,
  topology,
  type EtcdCluster,
  type RedisServer,
  type ZooKeeperEnsemble,
} from '@fencelock/test-infra';
import { memoryStoreProbe } from './memory-subject.js';
import { etcdCounterProbe, redisCounterProbe, zooKeeperCounterProbe, type CounterProbe } from './server-counters.js';
import type { Backend } from './subjects.js';

/** The server addresses subjects connect to. */
export interface BenchAddresses {
  /** `redis://host:port` of the single Redis. */
  readonly redisUrl: string;
  /** `redis://host:port` of each Redlock master. */
  readonly redlockUrls: readonly string[];
  /** ZooKeeper connection string (may end in a chroot). */
  readonly zkConnectionString: string;
  /** ZooKeeper servers as `host:port`, without chroot (for `mntr`). */
  readonly zkHosts: readonly string[];
  /** etcd client endpoints, `http://host:port`. */
  readonly etcdEndpoints: readonly string[];
  /**
   * PostgreSQL connection URL: the shared server's only. The counted scenarios (dedicated servers)
   * have no PostgreSQL counters yet, so its subjects are absent there.
   */
  readonly postgresUrl?: string;
}

/** A set of servers with a counter probe per backend. */
export interface BenchServers {
  readonly addresses: BenchAddresses;
  /** True when the bench started these servers and nobody else uses them. */
  readonly dedicated: boolean;
  /** The counter probe of `backend`'s servers. */
  probe(backend: Backend): CounterProbe;
  /** Stops what the bench started (nothing for the shared topology). Idempotent. */
  stop(): Promise<void>;
}

/** The shared topology's addresses (from `FENCELOCK_*` or the defaults). */
export function sharedAddresses(): BenchAddresses {
  const { redisUrl, redlockUrls, zkConnectionString, zkHosts, etcdEndpoints, postgresUrl } = topology();
  // Every ZooKeeper client of the bench talks to the same member: a write costs more through a
  // follower than on the leader, and clients that pick members at random would turn that into noise
  // in the ratios (up to ~30 %).
  return { redisUrl, redlockUrls, zkConnectionString: zkHosts[0] ?? zkConnectionString, zkHosts, etcdEndpoints, postgresUrl };
}

/** The Redis servers a backend's subjects send to: Redis's one, Redlock's masters; `undefined` for any other backend. */
export function redisUrlsOf(backend: string, addresses: BenchAddresses = sharedAddresses()): readonly string[] | undefined {
  if (backend === 'redis') return [addresses.redisUrl];
  if (backend === 'redlock') return addresses.redlockUrls;
  return undefined;
}

function probes(addresses: BenchAddresses): (backend: Backend) => CounterProbe {
  return (backend) => {
    switch (backend) {
      case 'redis':
        return redisCounterProbe([addresses.redisUrl]);
      case 'redlock':
        return redisCounterProbe(addresses.redlockUrls);
      case 'zookeeper':
        return zooKeeperCounterProbe(addresses.zkHosts.join(','));
      case 'etcd':
        return etcdCounterProbe(addresses.etcdEndpoints);
      case 'memory':
        return memoryStoreProbe();
      case 'postgres':
        // No server counters for PostgreSQL yet (pg_stat_* are flushed lazily, up to a second late).
        return { source: 'none (PostgreSQL counters not read)', read: async () => ({}) };
    }
  };
}

/** The shared topology; its counters also see every other client of those servers. */
export function sharedServers(): BenchServers {
  const addresses = sharedAddresses();
  return { addresses, dedicated: false, probe: probes(addresses), stop: async () => undefined };
}

/** Sizes of the dedicated servers. */
export interface DedicatedServerOptions {
  /** Redlock masters. @default 5 (as the shared topology) */
  readonly redlockMasters?: number;
  /** ZooKeeper ensemble size (odd). @default 3 */
  readonly zooKeeperSize?: number;
  /** etcd cluster size (odd). @default 3 */
  readonly etcdSize?: number;
}

/**
 * Starts a Redis, the Redlock masters, a ZooKeeper ensemble and an etcd cluster of the bench's own
 * (test-infra's dedicated servers: free loopback ports, temp dirs, killed at exit if not stopped).
 * On a start failure, whatever did start is stopped before the error is rethrown.
 */
export async function startDedicatedServers(options: DedicatedServerOptions = {}): Promise<BenchServers> {
  const started: { stop(): Promise<void> }[] = [];
  const stop = async (): Promise<void> => {
    await Promise.allSettled(started.splice(0).map((server) => server.stop()));
  };
  try {
    const redis: RedisServer = await startRedisServer();
    started.push(redis);
    const masters = await startRedisMasters(options.redlockMasters ?? 5);
    started.push(...masters);
    const zooKeeper: ZooKeeperEnsemble = await startZooKeeperEnsemble({ size: options.zooKeeperSize ?? 3, maxSessionTimeout: 60_000 });
    started.push(zooKeeper);
    const etcd: EtcdCluster = await startEtcdCluster({ size: options.etcdSize ?? 3 });
    started.push(etcd);
    const zkHosts = zooKeeper.connectionString.split(',');
    const addresses: BenchAddresses = {
      redisUrl: redis.url,
      redlockUrls: masters.map((master) => master.url),
      zkConnectionString: zooKeeper.connectionString,
      zkHosts,
      etcdEndpoints: [...etcd.endpoints],
    };
    return { addresses, dedicated: true, probe: probes(addresses), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
