/**
 * ZooKeeper: the configuration and java command line (shared with the CLI) and dedicated
 * ensembles for fault tests.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SLF4J_SIMPLE_JAR, ZOOKEEPER_JAR, ensureBinaries } from './binaries.js';
import { forgetTempDir, rememberTempDir } from './exit-cleanup.js';
import { zooKeeperMode, type ZooKeeperMode } from './four-letter.js';
import { ManagedServer, type ServerNode } from './managed-server.js';
import { LOOPBACK, freePorts } from './ports.js';
import type { ServerSpec } from './processes.js';
import { waitFor } from './wait.js';

/** Ports of one ensemble member. */
export interface ZooKeeperMember {
  readonly clientPort: number;
  /** Followers connect to the leader here. */
  readonly quorumPort: number;
  /** Leader election. */
  readonly electionPort: number;
}

/** What {@link zooKeeperNodeSpec} needs. */
export interface ZooKeeperSpecOptions {
  readonly members: readonly ZooKeeperMember[];
  /** 0-based index of this node in `members` (its myid is index + 1). */
  readonly index: number;
  readonly dataDir: string;
  readonly logFile: string;
  readonly tickTime: number;
  readonly minSessionTimeout?: number;
  readonly maxSessionTimeout?: number;
}

/**
 * The JVM flags measured to start three servers quickly on 2 cores with little memory; no
 * perf-data file in /tmp.
 */
const JAVA_FLAGS = ['-Xms32m', '-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-XX:-UsePerfData', '-Djava.net.preferIPv4Stack=true'];

/**
 * Writes `zoo.cfg` and `myid` into the node's data dir and returns the java command line.
 * The Debian `zkServer.sh --config` form does not work, so QuorumPeerMain is run directly;
 * slf4j-simple on the class path makes the logs appear on stderr.
 */
export function zooKeeperNodeSpec(options: ZooKeeperSpecOptions): ServerSpec {
  const member = options.members[options.index];
  if (member === undefined) throw new RangeError(`no member at index ${options.index}`);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const lines = [
    `tickTime=${options.tickTime}`,
    // initLimit/syncLimit are in ticks: 5 s and 2.5 s at tickTime 500.
    'initLimit=10',
    'syncLimit=5',
    `dataDir=${options.dataDir}`,
    `clientPort=${member.clientPort}`,
    `clientPortAddress=${LOOPBACK}`,
    // Jetty's admin server would take 8080 on every node.
    'admin.enableServer=false',
    '4lw.commands.whitelist=srvr,ruok,mntr,stat',
    // Test data: no periodic purge, no autocreate surprises.
    'autopurge.purgeInterval=0',
    ...(options.minSessionTimeout !== undefined ? [`minSessionTimeout=${options.minSessionTimeout}`] : []),
    ...(options.maxSessionTimeout !== undefined ? [`maxSessionTimeout=${options.maxSessionTimeout}`] : []),
    ...options.members.map((m, i) => `server.${i + 1}=${LOOPBACK}:${m.quorumPort}:${m.electionPort}`),
  ];
  const configFile = join(options.dataDir, 'zoo.cfg');
  writeFileSync(configFile, `${lines.join('\n')}\n`);
  writeFileSync(join(options.dataDir, 'myid'), `${options.index + 1}\n`);
  return {
    label: `zookeeper node ${options.index} (${LOOPBACK}:${member.clientPort})`,
    command: 'java',
    args: [
      ...JAVA_FLAGS,
      '-cp',
      `${ZOOKEEPER_JAR}:${SLF4J_SIMPLE_JAR}`,
      'org.apache.zookeeper.server.quorum.QuorumPeerMain',
      configFile,
    ],
    cwd: options.dataDir,
    logFile: options.logFile,
  };
}

/** Whether `modes` (one per node, undefined = not serving) show a formed ensemble with one leader. */
export function ensembleLeader(modes: readonly (ZooKeeperMode | undefined)[]): number | undefined {
  if (modes.length === 1) return modes[0] === 'standalone' || modes[0] === 'leader' ? 0 : undefined;
  const leaders = modes.flatMap((mode, i) => (mode === 'leader' ? [i] : []));
  return leaders.length === 1 ? leaders[0] : undefined;
}

/** Options of {@link startZooKeeperEnsemble}. */
export interface ZooKeeperEnsembleOptions {
  /** Number of servers, odd, 1–7. Default 3. */
  readonly size?: number;
  /** Milliseconds per tick. Default 500, so session timeouts down to 1 s (2 ticks) are allowed. */
  readonly tickTime?: number;
  /** Default: the server's own (2 × tickTime). */
  readonly minSessionTimeout?: number;
  /** Default 60000. */
  readonly maxSessionTimeout?: number;
}

/** Options of {@link ZooKeeperEnsemble.leaderIndex}. */
export interface LeaderOptions {
  /** How long to wait for exactly one leader among the running, unpaused nodes. Default 10 s. */
  readonly timeoutMs?: number;
}

/** A dedicated ZooKeeper ensemble owned by one test. */
export interface ZooKeeperEnsemble {
  /** `127.0.0.1:p1,127.0.0.1:p2,…` for the client library. */
  readonly connectionString: string;
  /** One entry per server; index i has myid i + 1. */
  readonly nodes: readonly ServerNode[];
  /** Index in `nodes` of the current leader; waits (bounded) while an election is under way. */
  leaderIndex(options?: LeaderOptions): Promise<number>;
  /** Kills every server and deletes the data dirs. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a dedicated ZooKeeper ensemble on free loopback ports in a fresh temp dir and waits
 * (≤ 30 s) until every node reports a `Mode:` and exactly one is leader.
 *
 * @throws InfraError with the tail of the failing node's log.
 */
export async function startZooKeeperEnsemble(options: ZooKeeperEnsembleOptions = {}): Promise<ZooKeeperEnsemble> {
  const size = options.size ?? 3;
  if (!Number.isInteger(size) || size < 1 || size > 7 || size % 2 === 0) {
    throw new RangeError(`size must be an odd integer from 1 to 7, got ${String(size)}`);
  }
  await ensureBinaries();
  const root = await mkdtemp(join(tmpdir(), 'fencelock-zk-'));
  rememberTempDir(root);
  const ports = await freePorts(size * 3);
  const members: ZooKeeperMember[] = Array.from({ length: size }, (_, i) => ({
    clientPort: ports[i * 3] ?? 0,
    quorumPort: ports[i * 3 + 1] ?? 0,
    electionPort: ports[i * 3 + 2] ?? 0,
  }));
  const nodes = members.map((member, index) => {
    const spec = zooKeeperNodeSpec({
      members,
      index,
      dataDir: join(root, `node-${index}`),
      logFile: join(root, `node-${index}.log`),
      tickTime: options.tickTime ?? 500,
      maxSessionTimeout: options.maxSessionTimeout ?? 60_000,
      ...(options.minSessionTimeout !== undefined ? { minSessionTimeout: options.minSessionTimeout } : {}),
    });
    const port = member.clientPort;
    return new ManagedServer(spec.label, port, spec, async () => ((await zooKeeperMode(port, 500)) ? true : undefined));
  });
  const ensemble = new DedicatedEnsemble(root, nodes);
  try {
    await Promise.all(nodes.map((node) => node.start()));
    await ensemble.leaderIndex({ timeoutMs: 30_000 });
  } catch (error) {
    await ensemble.stop();
    throw error;
  }
  return ensemble;
}

class DedicatedEnsemble implements ZooKeeperEnsemble {
  #stopped = false;

  constructor(
    private readonly root: string,
    readonly nodes: readonly ManagedServer[],
  ) {}

  get connectionString(): string {
    return this.nodes.map((node) => `${LOOPBACK}:${node.port}`).join(',');
  }

  async leaderIndex(options: LeaderOptions = {}): Promise<number> {
    let modes: (ZooKeeperMode | undefined)[] = [];
    return waitFor(
      async () => {
        modes = await Promise.all(
          this.nodes.map((node) => (node.running && !node.paused ? zooKeeperMode(node.port, 1_000) : undefined)),
        );
        return ensembleLeader(modes);
      },
      {
        what: 'a single ZooKeeper leader',
        timeoutMs: options.timeoutMs ?? 10_000,
        intervalMs: 50,
        describe: () => `modes: ${modes.map((mode, i) => `node ${i}=${mode ?? 'not serving'}`).join(', ')}`,
      },
    );
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.nodes.map((node) => node.kill()));
    await rm(this.root, { recursive: true, force: true });
    forgetTempDir(this.root);
  }
}
