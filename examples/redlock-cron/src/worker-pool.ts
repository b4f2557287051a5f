import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SchedulerMessage, TickReport, WorkerConfig, WorkerMessage } from './protocol.js';

const WORKER_ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));
// The example's folder: `--import tsx` is resolved from there, wherever the scheduler was started.
const EXAMPLE_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** How long a worker may take to start (load tsx, connect to the masters), in ms. */
const READY_TIMEOUT_MS = 30_000;
/** How long a worker may take to exit after `stop`, in ms, before it is killed. */
const STOP_TIMEOUT_MS = 5_000;

/** One worker process, as the scheduler sees it. */
interface Worker {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  /** Reports not yet taken by {@link WorkerPool.nextReport}. */
  readonly reports: (TickReport | Error)[];
  wake?: () => void;
}

/**
 * Separate worker processes, as several machines running the same cron schedule would be. Each
 * is forked once and handles many ticks. The pool only ever signals its own children, and
 * {@link close} kills whatever is still running, so nothing outlives the scheduler.
 */
export class WorkerPool {
  readonly #workers = new Map<string, Worker>();
  /** Workers that announced they stop themselves, not yet taken by {@link nextPause}. */
  readonly #pausing: string[] = [];
  #wakePause: (() => void) | undefined;
  readonly #onFork: ((pid: number) => void) | undefined;

  /** `onFork` is called with each worker's process id as soon as it is forked. */
  constructor(onFork?: (pid: number) => void) {
    this.#onFork = onFork;
  }

  /** Process ids of the workers started so far (for a caller that must clean up after a crash). */
  get pids(): number[] {
    return [...this.#workers.values()].flatMap((worker) => (worker.child.pid === undefined ? [] : [worker.child.pid]));
  }

  /** Forks a worker and resolves once it reaches a majority of the Redis masters. */
  async start(config: WorkerConfig): Promise<void> {
    const child = fork(WORKER_ENTRY, [JSON.stringify(config)], {
      cwd: EXAMPLE_ROOT,
      execArgv: ['--conditions=@fencelock/source', '--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    if (child.pid !== undefined) this.#onFork?.(child.pid);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const worker: Worker = { name: config.name, child, exited, reports: [] };
    this.#workers.set(config.name, worker);
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${config.name} did not start within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${config.name} exited with code ${String(code)} before it was ready`));
      });
      child.on('message', (message: WorkerMessage) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve();
          return;
        }
        if (message.type === 'pausing') {
          this.#pausing.push(config.name);
          this.#wakePause?.();
          return;
        }
        worker.reports.push(message.type === 'report' ? message.report : new Error(`${config.name} failed on ${message.date}: ${message.error}`));
        worker.wake?.();
      });
    });
    await ready;
  }

  /** Sends a tick to a worker. */
  send(name: string, message: SchedulerMessage): void {
    this.#get(name).child.send(message);
  }

  /** The worker's report on its next tick, waiting at most `timeoutMs`. */
  async nextReport(name: string, timeoutMs: number): Promise<TickReport> {
    const worker = this.#get(name);
    if (worker.reports.length === 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} sent no report within ${timeoutMs} ms`)), timeoutMs);
        worker.wake = () => {
          clearTimeout(timer);
          resolve();
        };
        void worker.exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`${name} exited before it reported`));
        });
      });
      worker.wake = undefined;
    }
    const next = worker.reports.shift();
    if (next === undefined || next instanceof Error) throw next ?? new Error(`${name} sent no report`);
    return next;
  }

  /** The name of the next worker that stops itself before its write, waiting at most `timeoutMs`. */
  async nextPause(timeoutMs: number): Promise<string> {
    if (this.#pausing.length === 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no worker paused within ${timeoutMs} ms`)), timeoutMs);
        this.#wakePause = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wakePause = undefined;
    }
    return this.#pausing.shift() ?? '';
  }

  /** Lets a stopped worker run again (SIGCONT). */
  resume(name: string): void {
    this.#get(name).child.kill('SIGCONT');
  }

  /** Asks every worker to stop, and kills (SIGKILL) those that have not exited in time. Idempotent. */
  async close(): Promise<void> {
    await Promise.all(
      [...this.#workers.values()].map(async (worker) => {
        if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
        worker.child.kill('SIGCONT'); // a stopped worker could neither read `stop` nor exit
        if (worker.child.connected) worker.child.send({ type: 'stop' } satisfies SchedulerMessage);
        const timer = setTimeout(() => worker.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await worker.exited;
        clearTimeout(timer);
      }),
    );
  }

  #get(name: string): Worker {
    const worker = this.#workers.get(name);
    if (worker === undefined) throw new Error(`no worker named ${name}`);
    return worker;
  }
}
