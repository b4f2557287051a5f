/** Redis servers: the command line (shared with the CLI) and dedicated servers for fault tests. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries } from './binaries.js';
import { InfraError } from './errors.js';
import { forgetTempDir, rememberTempDir } from './exit-cleanup.js';
import { ManagedServer, type RestartOptions, type ServerNode } from './managed-server.js';
import { LOOPBACK, RESERVED_PORTS, freePort, isPortFree } from './ports.js';
import type { ServerSpec } from './processes.js';
import { redisCommand } from './resp.js';

/** What {@link redisServerSpec} needs. */
export interface RedisSpecOptions {
  readonly port: number;
  readonly dataDir: string;
  readonly logFile: string;
  /** `appendonly yes` + `appendfsync always`: every acknowledged write survives kill -9. */
  readonly persistence?: boolean;
  /** Start as a Redis Cluster node (its bus port is `port + 10000`). */
  readonly clusterEnabled?: boolean;
}

/** The redis-server command line: loopback only, no RDB snapshots, AOF only when asked. */
export function redisServerSpec(options: RedisSpecOptions): ServerSpec {
  const args = [
    '--bind', LOOPBACK,
    '--port', String(options.port),
    '--dir', options.dataDir,
    '--save', '',
    '--daemonize', 'no',
    '--logfile', '',
    '--appendonly', options.persistence ? 'yes' : 'no',
  ];
  if (options.persistence) args.push('--appendfsync', 'always');
  if (options.clusterEnabled) {
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000');
  }
  return {
    label: `redis ${LOOPBACK}:${options.port}`,
    command: 'redis-server',
    args,
    cwd: options.dataDir,
    logFile: options.logFile,
  };
}

/** True when Redis on 127.0.0.1:`port` answers PING with PONG (not while it is loading its AOF). */
export async function redisPing(port: number, timeoutMs = 1_000, host = LOOPBACK): Promise<boolean> {
  try {
    return (await redisCommand(port, ['PING'], { timeoutMs, host })) === 'PONG';
  } catch {
    return false;
  }
}

/** Options of {@link startRedisServer}. */
export interface RedisServerOptions {
  /** `appendonly yes` + `appendfsync always`. Default false (no persistence at all). */
  readonly persistence?: boolean;
  /** A fixed port (must be free and not one of the shared topology's); default: a free one. */
  readonly port?: number;
}

/** Options of {@link RedisServer.restart}. */
export interface RedisRestartOptions extends RestartOptions {
  /** Switch persistence for the restarted process; default: unchanged. */
  readonly persistence?: boolean;
}

/** A dedicated redis-server owned by one test. */
export interface RedisServer extends ServerNode {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Whether the current (or next) process runs with AOF + fsync always. */
  readonly persistence: boolean;
  /** Kills (SIGKILL) if running, starts again on the same data dir and port, waits for PONG. */
  restart(options?: RedisRestartOptions): Promise<void>;
  /** Kills the process and deletes its data dir. Idempotent. */
  stop(): Promise<void>;
}

class DedicatedRedis extends ManagedServer implements RedisServer {
  #persistence: boolean;
  #stopped = false;

  constructor(
    port: number,
    private readonly root: string,
    persistence: boolean,
  ) {
    super(`redis ${LOOPBACK}:${port}`, port, DedicatedRedis.spec(port, root, persistence), () => readyProbe(port));
    this.#persistence = persistence;
  }

  static spec(port: number, root: string, persistence: boolean): ServerSpec {
    return redisServerSpec({ port, dataDir: join(root, 'data'), logFile: join(root, 'redis.log'), persistence });
  }

  get url(): string {
    return `redis://${LOOPBACK}:${this.port}`;
  }

  get persistence(): boolean {
    return this.#persistence;
  }

  override async restart(options: RedisRestartOptions = {}): Promise<void> {
    if (this.#stopped) throw new InfraError(`${this.label} was stopped; start a new one`);
    if (options.persistence !== undefined && options.persistence !== this.#persistence) {
      this.#persistence = options.persistence;
      this.setSpec(DedicatedRedis.spec(this.port, this.root, options.persistence));
    }
    await super.restart(options);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.kill();
    await rm(this.root, { recursive: true, force: true });
    forgetTempDir(this.root);
  }
}

async function readyProbe(port: number): Promise<true | undefined> {
  return (await redisPing(port, 500)) ? true : undefined;
}

/** Attempts when a randomly chosen port turns out to be taken by a parallel test. */
const PORT_ATTEMPTS = 3;

/**
 * Starts a dedicated redis-server on a free loopback port in a fresh temp data dir and waits
 * (≤ 30 s) until it answers PING. Stop it with `stop()`; if a test forgets, it is killed when
 * the test process exits.
 *
 * @throws InfraError with the tail of the server's log when it does not become ready.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  await ensureBinaries();
  if (options.port !== undefined) {
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65_535) {
      throw new RangeError(`port must be an integer from 1 to 65535, got ${String(options.port)}`);
    }
    if (RESERVED_PORTS.has(options.port)) {
      throw new InfraError(`port ${options.port} belongs to the shared topology; dedicated servers use other ports`);
    }
    if (!(await isPortFree(options.port))) throw new InfraError(`port ${options.port} on ${LOOPBACK} is already in use`);
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt += 1) {
    const port = options.port ?? (await freePort());
    const root = await mkdtemp(join(tmpdir(), 'fencelock-redis-'));
    rememberTempDir(root);
    const server = new DedicatedRedis(port, root, options.persistence ?? false);
    try {
      await server.start();
      return server;
    } catch (error) {
      lastError = error;
      const portClash = server.logTail(50).includes('Address already in use');
      await server.stop();
      if (!portClash || options.port !== undefined) throw error;
    }
  }
  throw lastError;
}

/**
 * Starts `count` independent dedicated Redis masters in parallel (for Redlock tests that kill
 * a minority or a majority of them). If one fails to start, the others are stopped.
 */
export async function startRedisMasters(count: number, options: Omit<RedisServerOptions, 'port'> = {}): Promise<RedisServer[]> {
  if (!Number.isInteger(count) || count < 1 || count > 15) {
    throw new RangeError(`count must be an integer from 1 to 15, got ${String(count)}`);
  }
  const results = await Promise.allSettled(Array.from({ length: count }, () => startRedisServer(options)));
  const started = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((server) => server.stop()));
    throw failed.reason;
  }
  return started;
}
