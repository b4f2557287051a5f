/**
 * A dedicated PostgreSQL server owned by one test or chaos run: initdb in a fresh data dir, start on
 * a free loopback port, and PostgreSQL's own fault shapes. A PostgreSQL server is a postmaster plus
 * one process per session, so pausing or killing "the server" means all of them: SIGSTOP of the
 * postmaster alone would leave every connected session answering.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPostgresBinDir } from './binaries.js';
import { InfraError } from './errors.js';
import { forgetTempDir, rememberTempDir } from './exit-cleanup.js';
import { ManagedServer, type RestartOptions, type ServerNode } from './managed-server.js';
import { LOOPBACK, freePort } from './ports.js';
import { postgresProbe } from './postgres-probe.js';
import { initPostgresDataDir, postgresServerSpec, preparePostgresDataDir } from './postgres-server.js';
import { processState, signal, waitForStopState } from './processes.js';
import type { ServerSpec } from './processes.js';
import { waitFor } from './wait.js';

/** Options of {@link startPostgresServer}. */
export interface PostgresServerOptions {
  /**
   * `fsync` and `synchronous_commit` on, so every commit acknowledged survives a crash (what a
   * production server runs). Off (the shared server's setting) loses the last commits on a crash.
   * @default true
   */
  readonly durable?: boolean;
}

/** A dedicated PostgreSQL server (superuser `postgres`, trust authentication, database `postgres`). */
export interface PostgresServer extends ServerNode {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  /** SIGSTOP of the postmaster and of every server process it started (sessions, background workers). */
  pause(): Promise<void>;
  /** SIGCONT of every process {@link pause} stopped. */
  resume(): Promise<void>;
  /** A crash: SIGKILL of the postmaster and its processes. Data dir and port are kept. */
  kill(): Promise<void>;
  /** Fast shutdown (SIGINT: sessions are told and ended, a checkpoint is written), then start again (≤ 30 s each). */
  restart(options?: RestartOptions): Promise<void>;
  /** Fast shutdown and delete the data dir. Idempotent. */
  stop(): Promise<void>;
}

/** How long a fast shutdown may take before the server is killed instead, ms. */
const SHUTDOWN_TIMEOUT_MS = 15_000;

/** The PIDs `pid` started, from /proc (children only: PostgreSQL's processes are all the postmaster's). */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((word) => word !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** True while `pid` runs (a zombie has exited). */
function alive(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== 'Z' && state !== 'X';
}

class DedicatedPostgres extends ManagedServer implements PostgresServer {
  #stopped = false;
  #pausedPids: number[] = [];

  constructor(
    port: number,
    spec: ServerSpec,
    private readonly dirs: readonly string[],
  ) {
    super(`postgres ${LOOPBACK}:${port}`, port, spec, async () => ((await postgresProbe(port, { timeoutMs: 500 }))?.accepting === true ? true : undefined));
  }

  get url(): string {
    return `postgres://postgres@${LOOPBACK}:${this.port}/postgres`;
  }

  override get paused(): boolean {
    return this.#pausedPids.length > 0 && this.running;
  }

  override async pause(): Promise<void> {
    const postmaster = this.pid;
    // The postmaster first: stopped, it forks no new session while its children are listed.
    signal(postmaster, 'SIGSTOP');
    if (!(await waitForStopState(postmaster, true))) throw new InfraError(`${this.label} (pid ${postmaster}) did not stop after SIGSTOP`);
    const pids = [postmaster, ...childPids(postmaster)];
    this.#pausedPids = pids;
    for (const pid of pids.slice(1)) signal(pid, 'SIGSTOP');
    for (const pid of pids.slice(1)) await waitForStopState(pid, true);
  }

  override async resume(): Promise<void> {
    const pids = this.#pausedPids;
    this.#pausedPids = [];
    // Children first, so the postmaster finds its sessions running when it runs again.
    for (const pid of pids.slice(1)) signal(pid, 'SIGCONT');
    for (const pid of pids.slice(0, 1)) signal(pid, 'SIGCONT');
    for (const pid of pids) await waitForStopState(pid, false);
  }

  override async kill(): Promise<void> {
    if (!this.running) return;
    const postmaster = this.pid;
    const children = childPids(postmaster);
    this.#pausedPids = [];
    // Orphaned sessions would keep the shared memory and the port: a restart could not start.
    for (const pid of children) {
      signal(pid, 'SIGCONT');
      signal(pid, 'SIGKILL');
    }
    await super.kill();
    await waitFor(async () => (children.every((pid) => !alive(pid)) ? true : undefined), {
      what: `the processes of ${this.label} to exit after SIGKILL`,
      timeoutMs: 10_000,
      intervalMs: 20,
    });
  }

  /** Fast shutdown, bounded; the server is killed when it does not finish in time. */
  async #shutdown(): Promise<void> {
    if (!this.running) return;
    const postmaster = this.pid;
    if (this.paused) await this.resume();
    signal(postmaster, 'SIGINT');
    try {
      await waitFor(async () => (this.running ? undefined : true), {
        what: `${this.label} to finish its fast shutdown`,
        timeoutMs: SHUTDOWN_TIMEOUT_MS,
        intervalMs: 20,
      });
    } catch {
      await this.kill();
    }
  }

  override async restart(options: RestartOptions = {}): Promise<void> {
    if (this.#stopped) throw new InfraError(`${this.label} was stopped; start a new one`);
    await this.#shutdown();
    await super.restart(options);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#shutdown();
    await Promise.all(this.dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    for (const dir of this.dirs) forgetTempDir(dir);
  }
}

/**
 * Starts a dedicated PostgreSQL (Debian's binaries, see `findPostgresBinDir()`) on a free loopback
 * port in a fresh data dir, and waits (≤ 30 s) until it accepts connections; initdb takes a few
 * seconds. Stop it with `stop()`; if a test forgets, the postmaster is killed when the test
 * process exits (its sessions then end by themselves).
 *
 * @throws InfraError when PostgreSQL is not installed, or with the log tail when it does not start.
 */
export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const binDir = findPostgresBinDir();
  if (binDir === undefined) throw new InfraError('PostgreSQL (postgres, initdb) is not installed; see ensureBinaries()');
  const root = await mkdtemp(join(tmpdir(), 'fencelock-pg-'));
  rememberTempDir(root);
  // As root the data dir is a separate temp dir the postgres system user owns (see preparePostgresDataDir).
  const dataDir = await preparePostgresDataDir(join(root, 'data'));
  if (dataDir !== join(root, 'data')) rememberTempDir(dataDir);
  const dirs = dataDir === join(root, 'data') ? [root] : [root, dataDir];
  try {
    await initPostgresDataDir({ binDir, dataDir, logFile: join(root, 'initdb.log') });
  } catch (error) {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    throw error;
  }
  const port = await freePort();
  const spec = postgresServerSpec({ binDir, port, dataDir, logFile: join(root, 'postgres.log') });
  // Later `-c` settings override earlier ones.
  const durable = options.durable ?? true ? ['-c', 'fsync=on', '-c', 'synchronous_commit=on'] : [];
  const server = new DedicatedPostgres(port, { ...spec, args: [...spec.args, ...durable] }, dirs);
  try {
    await server.start();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}
