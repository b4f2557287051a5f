/**
 * The six services of the shared topology (DESIGN.md): which ports each needs, how to start
 * it as detached processes under `.infra/`, and how to health-check it.
 */
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findPostgresBinDir } from '../binaries.js';
import { InfraError, formatLogTail } from '../errors.js';
import { etcdHealthy, etcdMemberSpec, httpUrl, type EtcdMember } from '../etcd-cluster.js';
import { zooKeeperMode } from '../four-letter.js';
import { LOOPBACK } from '../ports.js';
import { postgresProbe } from '../postgres-probe.js';
import { initPostgresDataDir, postgresServerSpec, preparePostgresDataDir } from '../postgres-server.js';
import { redisServerSpec } from '../redis-server.js';
import { RedisReplyError, redisCommand } from '../resp.js';
import type { MemberRecord } from '../state.js';
import type { HostPort, ServiceName, Topology } from '../topology.js';
import { waitFor } from '../wait.js';
import { ensembleLeader, zooKeeperNodeSpec, type ZooKeeperMember } from '../zookeeper-ensemble.js';
import { SHARED_READY_TIMEOUT_MS, spawnDetached, waitUntilReady, type SpawnedMember } from './detached.js';

/** Result of a health check. */
export interface ServiceHealth {
  readonly ok: boolean;
  /** Short text for the status table ("PONG", "leader 127.0.0.1:2182", "2/3 healthy"…). */
  readonly detail: string;
}

/** Where a service's members keep data and logs, and how to record PIDs as soon as they exist. */
export interface StartContext {
  readonly topology: Topology;
  /** This service's data root; member i uses `<dataRoot>/<i>` as data dir and working directory. */
  readonly dataRoot: string;
  readonly logDir: string;
  /** Called right after spawning, before readiness, so a crash of the CLI leaves a record for `down`. */
  readonly record: (members: readonly MemberRecord[]) => void;
}

/** One service of the shared topology. */
export interface SharedService {
  readonly name: ServiceName;
  /** Every port our own servers bind (client ports first), for the "port in use" check. */
  ports(t: Topology): number[];
  health(t: Topology): Promise<ServiceHealth>;
  /** Starts the members detached and waits until the service is healthy. */
  start(ctx: StartContext): Promise<void>;
}

/** ZooKeeper quorum/election ports sit at fixed offsets from the client port (2181 → 2888, 3888). */
const ZK_QUORUM_OFFSET = 707;
const ZK_ELECTION_OFFSET = 1707;
/** etcd peer port = client port + 1 (2379 → 2380, 22379 → 22380, 32379 → 32380). */
const ETCD_PEER_OFFSET = 1;
/** Redis Cluster bus port = client port + 10000 (fixed by Redis). */
const REDIS_BUS_OFFSET = 10_000;

function ports(servers: readonly HostPort[]): number[] {
  return servers.map((s) => s.port);
}

function dataDir(ctx: StartContext, index: number): string {
  return join(ctx.dataRoot, String(index));
}

function logFile(ctx: StartContext, name: ServiceName, index: number): string {
  return join(ctx.logDir, `${name}-${index}.log`);
}

/** PONG, or NOAUTH for a user's own password-protected server (it answers, so it is up). */
async function redisAnswers(server: HostPort): Promise<'PONG' | 'NOAUTH' | undefined> {
  try {
    return (await redisCommand(server.port, ['PING'], { host: server.host, timeoutMs: 1_000 })) === 'PONG' ? 'PONG' : undefined;
  } catch (error) {
    return error instanceof RedisReplyError && error.message.startsWith('NOAUTH') ? 'NOAUTH' : undefined;
  }
}

async function redisGroupHealth(servers: readonly HostPort[]): Promise<ServiceHealth> {
  const answers = await Promise.all(servers.map(redisAnswers));
  const up = answers.filter((a) => a !== undefined).length;
  const detail = servers.length === 1 ? (answers[0] ?? 'no answer') : `${up}/${servers.length} PONG`;
  return { ok: up === servers.length, detail };
}

/** Spawns one detached redis-server per server and waits for PONG from each. */
async function startRedisGroup(ctx: StartContext, name: ServiceName, servers: readonly HostPort[], clusterEnabled: boolean): Promise<SpawnedMember[]> {
  const members = servers.map((server, index) =>
    spawnDetached(
      redisServerSpec({ port: server.port, dataDir: dataDir(ctx, index), logFile: logFile(ctx, name, index), clusterEnabled }),
      server.port,
    ),
  );
  ctx.record(members.map((m) => m.record));
  await Promise.all(
    members.map((member, index) => waitUntilReady(member, async () => (await redisAnswers(servers[index] ?? { host: LOOPBACK, port: 0 })) === 'PONG')),
  );
  return members;
}

const redis: SharedService = {
  name: 'redis',
  ports: (t) => ports(t.servers.redis),
  health: (t) => redisGroupHealth(t.servers.redis),
  async start(ctx) {
    await startRedisGroup(ctx, 'redis', ctx.topology.servers.redis, false);
  },
};

const redlock: SharedService = {
  name: 'redlock',
  ports: (t) => ports(t.servers.redlock),
  health: (t) => redisGroupHealth(t.servers.redlock),
  async start(ctx) {
    await startRedisGroup(ctx, 'redlock', ctx.topology.servers.redlock, false);
  },
};

async function clusterInfo(server: HostPort): Promise<string> {
  try {
    const info = await redisCommand(server.port, ['CLUSTER', 'INFO'], { host: server.host, timeoutMs: 1_000 });
    return typeof info === 'string' ? info : '';
  } catch {
    return '';
  }
}

const redisCluster: SharedService = {
  name: 'redisCluster',
  ports: (t) => [...ports(t.servers.redisCluster), ...ports(t.servers.redisCluster).map((p) => p + REDIS_BUS_OFFSET)],
  async health(t) {
    const infos = await Promise.all(t.servers.redisCluster.map(clusterInfo));
    const ok = infos.filter((info) => info.includes('cluster_state:ok')).length;
    return { ok: ok === infos.length, detail: `cluster_state:ok ${ok}/${infos.length}` };
  },
  async start(ctx) {
    const servers = ctx.topology.servers.redisCluster;
    if (servers.length < 3) throw new InfraError(`a Redis Cluster needs at least 3 masters, FENCELOCK_REDIS_CLUSTER_URLS lists ${servers.length}`);
    const members = await startRedisGroup(ctx, 'redisCluster', servers, true);
    const log = join(ctx.logDir, 'redisCluster-create.log');
    await runBounded(
      'redis-cli',
      ['--cluster', 'create', ...servers.map((s) => `${LOOPBACK}:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      SHARED_READY_TIMEOUT_MS,
      log,
    );
    await waitFor(async () => ((await redisCluster.health(ctx.topology)).ok ? true : undefined), {
      what: 'the Redis Cluster to report cluster_state:ok on every node',
      timeoutMs: SHARED_READY_TIMEOUT_MS,
      intervalMs: 100,
      describe: () => members.map((m) => formatLogTail(m.spec.logFile, 5)).join('\n'),
    });
  },
};

function zkMembers(t: Topology): ZooKeeperMember[] {
  return t.servers.zookeeper.map((s) => ({
    clientPort: s.port,
    quorumPort: s.port + ZK_QUORUM_OFFSET,
    electionPort: s.port + ZK_ELECTION_OFFSET,
  }));
}

const zookeeper: SharedService = {
  name: 'zookeeper',
  ports: (t) => zkMembers(t).flatMap((m) => [m.clientPort, m.quorumPort, m.electionPort]),
  async health(t) {
    const servers = t.servers.zookeeper;
    const modes = await Promise.all(servers.map((s) => zooKeeperMode(s.port, 1_000, s.host)));
    const leader = ensembleLeader(modes);
    const serving = modes.filter((m) => m !== undefined).length;
    if (leader === undefined || serving !== servers.length) {
      return { ok: false, detail: `${serving}/${servers.length} serving, ${leader === undefined ? 'no leader' : 'leader'}` };
    }
    const s = servers[leader];
    return { ok: true, detail: `leader ${s?.host ?? ''}:${s?.port ?? ''}` };
  },
  async start(ctx) {
    const members = zkMembers(ctx.topology);
    const spawned = members.map((member, index) =>
      spawnDetached(
        zooKeeperNodeSpec({
          members,
          index,
          dataDir: dataDir(ctx, index),
          logFile: logFile(ctx, 'zookeeper', index),
          // tickTime 500: session timeouts from 1 s (2 ticks) to 60 s are accepted.
          tickTime: 500,
          maxSessionTimeout: 60_000,
        }),
        member.clientPort,
      ),
    );
    ctx.record(spawned.map((m) => m.record));
    await Promise.all(spawned.map((m) => waitUntilReady(m, async () => (await zooKeeperMode(m.record.port, 500)) !== undefined)));
    await waitFor(async () => ((await zookeeper.health(ctx.topology)).ok ? true : undefined), {
      what: 'a ZooKeeper ensemble with exactly one leader',
      timeoutMs: SHARED_READY_TIMEOUT_MS,
      intervalMs: 50,
    });
  },
};

function etcdMembers(t: Topology): EtcdMember[] {
  return t.servers.etcd.map((s) => ({ clientPort: s.port, peerPort: s.port + ETCD_PEER_OFFSET }));
}

const etcd: SharedService = {
  name: 'etcd',
  ports: (t) => etcdMembers(t).flatMap((m) => [m.clientPort, m.peerPort]),
  async health(t) {
    const results = await Promise.all(t.etcdEndpoints.map((endpoint) => etcdHealthy(endpoint)));
    const ok = results.filter(Boolean).length;
    return { ok: ok === results.length, detail: `${ok}/${results.length} healthy` };
  },
  async start(ctx) {
    const members = etcdMembers(ctx.topology);
    const spawned = members.map((member, index) =>
      spawnDetached(
        etcdMemberSpec({
          members,
          index,
          dataDir: dataDir(ctx, index),
          logFile: logFile(ctx, 'etcd', index),
          clusterToken: 'fencelock-shared',
        }),
        member.clientPort,
      ),
    );
    ctx.record(spawned.map((m) => m.record));
    await Promise.all(spawned.map((m) => waitUntilReady(m, () => etcdHealthy(httpUrl(m.record.port), 500))));
  },
};

/** The user and database named in a PostgreSQL URL (`postgres://user@host:port/database`). */
function postgresLogin(url: string): { user: string; database: string } {
  const parsed = new URL(url);
  return {
    user: decodeURIComponent(parsed.username) || 'postgres',
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'postgres',
  };
}

const postgres: SharedService = {
  name: 'postgres',
  ports: (t) => ports(t.servers.postgres),
  async health(t) {
    const server = t.servers.postgres[0] ?? { host: LOOPBACK, port: 0 };
    const result = await postgresProbe(server.port, { host: server.host, ...postgresLogin(t.postgresUrl), timeoutMs: 1_000 });
    return { ok: result?.accepting ?? false, detail: result?.detail ?? 'no answer' };
  },
  async start(ctx) {
    const binDir = findPostgresBinDir();
    if (binDir === undefined) throw new InfraError('PostgreSQL (postgres, initdb) is not installed; see ensureBinaries()');
    const port = ctx.topology.servers.postgres[0]?.port ?? 0;
    // As root this is a temp dir owned by the postgres user (it cannot enter .infra/); the
    // member's recorded cwd points there, and stopping the service deletes it.
    const data = await preparePostgresDataDir(dataDir(ctx, 0));
    const initLog = join(ctx.logDir, 'postgres-initdb.log');
    rmSync(initLog, { force: true });
    try {
      await initPostgresDataDir({ binDir, dataDir: data, logFile: initLog });
    } catch (error) {
      rmSync(data, { recursive: true, force: true });
      throw error;
    }
    const member = spawnDetached(postgresServerSpec({ binDir, port, dataDir: data, logFile: logFile(ctx, 'postgres', 0) }), port);
    ctx.record([member.record]);
    await waitUntilReady(member, async () => (await postgresProbe(port, { timeoutMs: 500 }))?.accepting === true);
  },
};

/** Every service, in table order. */
export const SHARED_SERVICES: readonly SharedService[] = [redis, redlock, redisCluster, zookeeper, etcd, postgres];

/** Runs a helper command with a time bound; its output goes to `log`, quoted in the error if it fails. */
function runBounded(command: string, args: readonly string[], timeoutMs: number, log: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const output: Buffer[] = [];
    const child = spawn(command, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new InfraError(`${command} failed to start: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const text = Buffer.concat(output).toString('utf8');
      writeFileSync(log, text);
      if (code === 0) resolve();
      else {
        const why = signal ? `was killed by ${signal} (time limit ${timeoutMs} ms)` : `exited with code ${String(code)}`;
        reject(new InfraError(`${command} ${args.join(' ')} ${why}\n${text.trimEnd().split('\n').slice(-15).join('\n')}`));
      }
    });
  });
}
