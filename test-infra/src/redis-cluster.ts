/** A dedicated Redis Cluster (masters only) for fault tests: start, pause/resume/restart all, stop. */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries } from './binaries.js';
import { InfraError } from './errors.js';
import { forgetTempDir, rememberTempDir } from './exit-cleanup.js';
import { ManagedServer } from './managed-server.js';
import { LOOPBACK, freePort } from './ports.js';
import { redisPing, redisServerSpec } from './redis-server.js';
import { redisCommand } from './resp.js';
import { waitFor } from './wait.js';

/** Redis Cluster bus port = client port + 10000 (fixed by Redis). */
const BUS_OFFSET = 10_000;
const CLUSTER_READY_TIMEOUT_MS = 30_000;

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** Number of masters (no replicas), 3 to 6. @default 3 */
  readonly masters?: number;
  /** `appendonly yes` + `appendfsync always` on every node. @default false */
  readonly persistence?: boolean;
}

/** A dedicated Redis Cluster owned by one test file. */
export interface DedicatedRedisCluster {
  /** `redis://127.0.0.1:<port>` of every master. */
  readonly urls: readonly string[];
  /** The master processes. */
  readonly nodes: readonly ManagedServer[];
  /** SIGSTOP every node (resolves once all are stopped). */
  pause(): Promise<void>;
  /** SIGCONT every node. */
  resume(): Promise<void>;
  /** SIGKILL every node, start them again on the same data dirs (and nodes.conf), wait for `cluster_state:ok`. */
  restart(): Promise<void>;
  /** Kills every node and deletes the data. Idempotent. */
  stop(): Promise<void>;
}

async function clusterOk(port: number): Promise<boolean> {
  try {
    return String(await redisCommand(port, ['CLUSTER', 'INFO'], { timeoutMs: 1_000 })).includes('cluster_state:ok');
  } catch {
    return false;
  }
}

function runRedisCli(args: readonly string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const output: Buffer[] = [];
    const child = spawn('redis-cli', [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new InfraError(`redis-cli failed to start: ${error.message}`));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new InfraError(`redis-cli ${args.join(' ')} exited with ${String(code)}: ${Buffer.concat(output).toString().slice(-2_000)}`));
    });
  });
}

/**
 * Starts a dedicated Redis Cluster of `masters` nodes on free loopback ports (each with its bus port
 * free too), creates the cluster with `redis-cli --cluster create`, and waits (≤ 30 s) for
 * `cluster_state:ok` on every node. Stop it with `stop()`; forgotten nodes are killed at exit.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<DedicatedRedisCluster> {
  const masters = options.masters ?? 3;
  if (!Number.isInteger(masters) || masters < 3 || masters > 6) {
    throw new RangeError(`masters must be an integer from 3 to 6, got ${String(masters)}`);
  }
  await ensureBinaries();
  const root = await mkdtemp(join(tmpdir(), 'fencelock-redis-cluster-'));
  rememberTempDir(root);
  const ports: number[] = [];
  for (let index = 0; index < masters; index += 1) {
    ports.push(await freePort({ exclude: ports.flatMap((p) => [p, p + BUS_OFFSET]), companionOffsets: [BUS_OFFSET] }));
  }
  const nodes: ManagedServer[] = [];
  for (const [index, port] of ports.entries()) {
    const dataDir = join(root, `node-${index}`);
    await mkdir(dataDir, { recursive: true });
    const spec = redisServerSpec({
      port,
      dataDir,
      logFile: join(root, `node-${index}.log`),
      persistence: options.persistence ?? false,
      clusterEnabled: true,
    });
    nodes.push(new ManagedServer(`redis cluster node ${LOOPBACK}:${port}`, port, spec, async () => ((await redisPing(port, 500)) ? true : undefined)));
  }
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await Promise.all(nodes.map((node) => node.kill()));
    await rm(root, { recursive: true, force: true });
    forgetTempDir(root);
  };
  const waitForOk = (): Promise<true> =>
    waitFor(async () => ((await Promise.all(ports.map(clusterOk))).every(Boolean) ? true : undefined), {
      what: 'the dedicated Redis Cluster to report cluster_state:ok on every node',
      timeoutMs: CLUSTER_READY_TIMEOUT_MS,
      intervalMs: 100,
    });
  try {
    await Promise.all(nodes.map((node) => node.start()));
    await runRedisCli(
      ['--cluster', 'create', ...ports.map((port) => `${LOOPBACK}:${port}`), '--cluster-replicas', '0', '--cluster-yes'],
      CLUSTER_READY_TIMEOUT_MS,
    );
    await waitForOk();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    urls: ports.map((port) => `redis://${LOOPBACK}:${port}`),
    nodes,
    pause: async () => {
      await Promise.all(nodes.map((node) => node.pause()));
    },
    resume: async () => {
      await Promise.all(nodes.map((node) => node.resume()));
    },
    restart: async () => {
      await Promise.all(nodes.map((node) => node.kill()));
      await Promise.all(nodes.map((node) => node.start()));
      await waitForOk();
    },
    stop,
  };
}
