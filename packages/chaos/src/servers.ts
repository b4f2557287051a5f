/**
 * Dedicated servers for one backend (test-infra: free loopback ports, temp dirs, pause/resume/kill/
 * restart), and an optional TCP proxy per client and server for blackhole and reset faults.
 */
import {
  type ServerNode,
  type TcpProxy,
  startEtcdCluster,
  startPostgresServer,
  startRedisMasters,
  startRedisServer,
  startTcpProxy,
  startZooKeeperEnsemble,
} from '@fencelock/test-infra';
import type { BackendName } from './backends.js';

/** The servers of one backend, owned by the parent process. */
export interface BackendServers {
  readonly backend: BackendName;
  /** One node per server, in the order clients get their ports. */
  readonly nodes: readonly ServerNode[];
  /** Short names for nemesis records: `redis-0`, `etcd-2`… */
  readonly names: readonly string[];
  /** Whether Redis runs with AOF `appendfsync always` (Redis and Redlock only). */
  readonly persistence: boolean;
  /** Restarts a Redis server switching persistence on or off (Redis and Redlock only). */
  setPersistence(persistence: boolean): Promise<void>;
  /** Index of the current leader (etcd, ZooKeeper); 0 for the others. */
  leaderIndex(): Promise<number>;
  /** Resumes paused nodes and restarts dead ones, so the next run starts healthy. */
  heal(): Promise<void>;
  stop(): Promise<void>;
}

/** Options of {@link startBackendServers}. */
export interface BackendServerOptions {
  /** Redis / Redlock: AOF + `appendfsync always`. @default false */
  readonly persistence?: boolean;
  /** ZooKeeper: the session timeout the clients will ask for, ms (the ensemble must allow it). */
  readonly sessionTimeoutMs?: number;
}

/** Starts the dedicated servers of `backend` (≤ 30 s; ZooKeeper is the slowest, a few JVM seconds). */
export async function startBackendServers(backend: BackendName, options: BackendServerOptions = {}): Promise<BackendServers> {
  let persistence = options.persistence ?? false;
  switch (backend) {
    case 'redis':
    case 'redlock': {
      const servers = backend === 'redis' ? [await startRedisServer({ persistence })] : await startRedisMasters(5, { persistence });
      return {
        backend,
        nodes: servers,
        names: servers.map((_, i) => `${backend}-${i}`),
        get persistence() {
          return persistence;
        },
        async setPersistence(next) {
          if (next === persistence) return;
          persistence = next;
          await Promise.all(servers.map((server) => server.restart({ persistence: next })));
        },
        leaderIndex: () => Promise.resolve(0),
        heal: () => healNodes(servers),
        stop: async () => {
          await Promise.all(servers.map((server) => server.stop()));
        },
      };
    }
    case 'etcd': {
      const cluster = await startEtcdCluster({ size: 3 });
      return {
        backend,
        nodes: cluster.nodes,
        names: cluster.nodes.map((_, i) => `etcd-${i}`),
        persistence: true,
        setPersistence: () => Promise.resolve(),
        leaderIndex: () => cluster.leaderIndex({ timeoutMs: 15_000 }),
        heal: async () => {
          await healNodes(cluster.nodes);
          await cluster.leaderIndex({ timeoutMs: 15_000 });
        },
        stop: () => cluster.stop(),
      };
    }
    case 'zookeeper': {
      const ensemble = await startZooKeeperEnsemble({ size: 3, tickTime: 500, maxSessionTimeout: Math.max(20_000, options.sessionTimeoutMs ?? 0) });
      return {
        backend,
        nodes: ensemble.nodes,
        names: ensemble.nodes.map((_, i) => `zk-${i}`),
        persistence: true,
        setPersistence: () => Promise.resolve(),
        leaderIndex: () => ensemble.leaderIndex({ timeoutMs: 15_000 }),
        heal: async () => {
          await healNodes(ensemble.nodes);
          await ensemble.leaderIndex({ timeoutMs: 15_000 });
        },
        stop: () => ensemble.stop(),
      };
    }
    case 'postgres': {
      // fsync and synchronous_commit on: the token counter survives a crash, as in production.
      // Pause stops the postmaster and every session's process; restart is a fast shutdown + start.
      const server = await startPostgresServer({ durable: true });
      return {
        backend,
        nodes: [server],
        names: ['postgres-0'],
        persistence: true,
        setPersistence: () => Promise.resolve(),
        leaderIndex: () => Promise.resolve(0),
        heal: () => healNodes([server]),
        stop: () => server.stop(),
      };
    }
  }
}

async function healNodes(nodes: readonly ServerNode[]): Promise<void> {
  await Promise.all(nodes.filter((node) => node.paused).map((node) => node.resume()));
  // Members of a quorum wait for each other: start the dead ones together, only "listening" first.
  const dead = nodes.filter((node) => !node.running);
  await Promise.all(dead.map((node) => node.restart({ wait: dead.length > 1 ? 'listening' : 'ready' })));
}

/** One proxy per (client, server): the nemesis can cut one client off without touching the others. */
export async function startClientProxies(servers: BackendServers): Promise<TcpProxy[]> {
  const proxies: TcpProxy[] = [];
  try {
    for (const node of servers.nodes) proxies.push(await startTcpProxy({ targetPort: node.port }));
  } catch (error) {
    await Promise.all(proxies.map((proxy) => proxy.close()));
    throw error;
  }
  return proxies;
}
