import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SupervisorMessage, WorkerConfig, WorkerMessage } from './protocol.js';

const WORKER_ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));
// The example's folder: `--import tsx` is resolved from there, wherever the supervisor was started.
const EXAMPLE_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** How long a worker may take to exit after `stop`, in ms, before it is killed. */
const STOP_TIMEOUT_MS = 10_000;

/** What the pool tells its owner. */
export interface WorkerPoolEvents {
  /** A worker was forked. */
  readonly forked?: (name: string, pid: number) => void;
  /** A worker sent a message. */
  readonly message: (name: string, message: WorkerMessage) => void;
  /** A worker exited (or was killed). */
  readonly exited: (name: string) => void;
}

/**
 * Separate worker processes, as several instances of a service would be. The pool only ever
 * signals its own children, and {@link close} kills whatever is still running.
 */
export class WorkerPool {
  readonly #children = new Map<string, { child: ChildProcess; exited: Promise<void> }>();
  readonly #events: WorkerPoolEvents;

  constructor(events: WorkerPoolEvents) {
    this.#events = events;
  }

  /** Forks a worker (it reports `ready` once connected). */
  start(config: WorkerConfig): void {
    const child = fork(WORKER_ENTRY, [JSON.stringify(config)], {
      cwd: EXAMPLE_ROOT,
      execArgv: ['--conditions=@fencelock/source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    if (child.pid !== undefined) this.#events.forked?.(config.name, child.pid);
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        this.#events.exited(config.name);
        resolve();
      }),
    );
    child.on('message', (message: WorkerMessage) => this.#events.message(config.name, message));
    this.#children.set(config.name, { child, exited });
  }

  /** The worker's process id. */
  pid(name: string): number | undefined {
    return this.#get(name).child.pid;
  }

  /** Kills the worker at once (SIGKILL): no release, no goodbye — its session just goes silent. */
  kill(name: string): void {
    this.#get(name).child.kill('SIGKILL');
  }

  /** Freezes the worker (SIGSTOP), as a long GC pause or a stopped VM would. */
  pause(name: string): void {
    this.#get(name).child.kill('SIGSTOP');
  }

  /** Lets a frozen worker run again (SIGCONT). */
  resume(name: string): void {
    this.#get(name).child.kill('SIGCONT');
  }

  /** Asks one worker to stop (it releases what it holds and exits) and waits for it to exit. */
  async stop(name: string): Promise<void> {
    const { child, exited } = this.#get(name);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGCONT'); // a frozen worker could neither read `stop` nor exit
    if (child.connected) child.send({ type: 'stop' } satisfies SupervisorMessage);
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  /** Stops every worker still running. Idempotent. */
  async close(): Promise<void> {
    await Promise.all([...this.#children.keys()].map((name) => this.stop(name)));
  }

  #get(name: string): { child: ChildProcess; exited: Promise<void> } {
    const entry = this.#children.get(name);
    if (entry === undefined) throw new Error(`no worker named ${name}`);
    return entry;
  }
}
