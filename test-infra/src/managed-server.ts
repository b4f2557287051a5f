/**
 * One dedicated server process owned by a test: start, pause (SIGSTOP), resume (SIGCONT),
 * kill (SIGKILL), restart on the same data dir and ports, stop. Used by the Redis, ZooKeeper
 * and etcd helpers; they supply the command line and the readiness probe.
 */
import type { ChildProcess } from 'node:child_process';
import { InfraError, formatLogTail, logTail } from './errors.js';
import { forgetPid, rememberPid } from './exit-cleanup.js';
import { childExited, signal, spawnServer, waitForStopState, type ServerSpec } from './processes.js';
import { isListening } from './ports.js';
import { waitFor, withTimeout } from './wait.js';

/** Readiness wait for every dedicated server, in milliseconds. */
export const READY_TIMEOUT_MS = 30_000;

/** A server process of a dedicated server or cluster member, as a test sees it. */
export interface ServerNode {
  /** "redis 127.0.0.1:24567", "zookeeper node 2 (127.0.0.1:25001)"… */
  readonly label: string;
  /** The client port (stays the same across restarts). */
  readonly port: number;
  /** PID of the current process; it changes on restart. Throws when not running. */
  readonly pid: number;
  /** False after kill()/stop() until the next restart(). */
  readonly running: boolean;
  /** True between pause() and resume(). */
  readonly paused: boolean;
  /** Where stdout and stderr of the server go. */
  readonly logFile: string;
  /** SIGSTOP; resolves once the kernel reports the process stopped (a "GC pause"). */
  pause(): Promise<void>;
  /** SIGCONT; resolves once the process runs again. */
  resume(): Promise<void>;
  /** SIGKILL; resolves once the process has exited. Data dir and ports are kept. */
  kill(): Promise<void>;
  /**
   * Kills the process if it still runs (SIGKILL: a crash), then starts it again on the same
   * data dir and ports and waits (≤ 30 s) until it is ready, or only until its client port
   * accepts connections with `{ wait: 'listening' }` — for a cluster member restarted while
   * the quorum is gone, which cannot become ready on its own.
   */
  restart(options?: RestartOptions): Promise<void>;
  /** The last lines of the log. */
  logTail(lines?: number): string;
}

/** Options of {@link ServerNode.restart}. */
export interface RestartOptions {
  /** `'ready'` (default): serving clients. `'listening'`: the client port accepts connections. */
  readonly wait?: 'ready' | 'listening';
}

/** How a {@link ManagedServer} checks readiness: resolves with a value when ready, undefined while not yet. */
export type ReadinessProbe = () => Promise<true | undefined>;

/** Implementation of {@link ServerNode} for one process started with {@link spawnServer}. */
export class ManagedServer implements ServerNode {
  #child: ChildProcess | undefined;
  #paused = false;

  constructor(
    readonly label: string,
    readonly port: number,
    private spec: ServerSpec,
    private readonly ready: ReadinessProbe,
  ) {}

  get logFile(): string {
    return this.spec.logFile;
  }

  get pid(): number {
    const pid = this.#child?.pid;
    if (pid === undefined || !this.running) throw new InfraError(`${this.label} is not running`);
    return pid;
  }

  get running(): boolean {
    const child = this.#child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  get paused(): boolean {
    return this.#paused && this.running;
  }

  /** Replaces the command line used by the next start (e.g. Redis persistence on/off). */
  setSpec(spec: ServerSpec): void {
    this.spec = spec;
  }

  /** Starts the process and waits (≤ 30 s) for readiness; on failure kills it and throws with the log tail. */
  async start(options: { readonly probe?: ReadinessProbe } = {}): Promise<void> {
    if (this.running) throw new InfraError(`${this.label} is already running (pid ${this.#child?.pid})`);
    const child = spawnServer(this.spec, { detached: false });
    this.#child = child;
    this.#paused = false;
    const pid = child.pid;
    let spawnError: Error | undefined;
    child.once('error', (error) => {
      spawnError = error;
    });
    if (pid !== undefined) {
      rememberPid(pid);
      child.once('exit', () => forgetPid(pid));
    }
    try {
      await waitFor(options.probe ?? this.ready, {
        what: `${this.label} to become ready`,
        timeoutMs: READY_TIMEOUT_MS,
        intervalMs: 50,
        abortReason: () => {
          if (spawnError) return `could not start ${this.spec.command}: ${spawnError.message}`;
          if (child.exitCode !== null) return `the process exited with code ${child.exitCode}`;
          if (child.signalCode !== null) return `the process was killed by ${child.signalCode}`;
          return undefined;
        },
        describe: () => formatLogTail(this.spec.logFile),
      });
    } catch (error) {
      await this.kill();
      throw new InfraError((error as Error).message);
    }
  }

  async pause(): Promise<void> {
    const pid = this.pid;
    signal(pid, 'SIGSTOP');
    this.#paused = true;
    if (!(await waitForStopState(pid, true))) throw new InfraError(`${this.label} (pid ${pid}) did not stop after SIGSTOP`);
  }

  async resume(): Promise<void> {
    const pid = this.pid;
    signal(pid, 'SIGCONT');
    this.#paused = false;
    if (!(await waitForStopState(pid, false))) throw new InfraError(`${this.label} (pid ${pid}) did not continue after SIGCONT`);
  }

  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined || !this.running || child.pid === undefined) return;
    // SIGKILL ends a stopped process too; SIGCONT first so nothing lingers in state T.
    signal(child.pid, 'SIGCONT');
    signal(child.pid, 'SIGKILL');
    this.#paused = false;
    await withTimeout(childExited(child), 10_000, `${this.label} (pid ${child.pid}) to exit after SIGKILL`);
  }

  async restart(options: RestartOptions = {}): Promise<void> {
    await this.kill();
    const port = this.port;
    await this.start(
      options.wait === 'listening' ? { probe: async () => ((await isListening(port, 500)) ? true : undefined) } : {},
    );
  }

  logTail(lines = 20): string {
    return logTail(this.spec.logFile, lines);
  }
}
