import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startFakeApi, type ApiCall } from './fake-api.js';
import type { CoordinatorMessage, WorkerConfig, WorkerMessage, WorkerReport } from './protocol.js';

const WORKER_ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));
// The example's folder: `--import tsx` is resolved from there, wherever the coordinator was started.
const EXAMPLE_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** How long a worker may take to start (load tsx, connect), in ms. */
const READY_TIMEOUT_MS = 30_000;
/** How long a worker may take for all its calls, in ms. */
const DONE_TIMEOUT_MS = 120_000;

/** Options of {@link runRateLimited}. */
export interface RateLimitOptions {
  /** `redis://` URL of the Redis holding the semaphore. */
  readonly redisUrl: string;
  /** Worker processes. @default 4 */
  readonly workers?: number;
  /** API calls per worker. @default 5 */
  readonly callsPerWorker?: number;
  /** The API's concurrency cap, and the semaphore's limit. @default 2 */
  readonly cap?: number;
  /** How long the API takes per call, in ms. @default 150 */
  readonly latencyMs?: number;
  /** Where the summary goes. @default console.log */
  readonly print?: (line: string) => void;
  /** Called with each worker's process id as soon as it is forked (to clean up after a crash). */
  readonly onWorkerStarted?: (pid: number) => void;
}

/** What happened in a run. */
export interface RateLimitResult {
  readonly cap: number;
  /** Every worker's report. */
  readonly reports: readonly WorkerReport[];
  /** What the API saw: the most calls in flight at once, the refusals, every accepted call. */
  readonly api: { readonly maxInFlight: number; readonly refused: number; readonly calls: readonly ApiCall[] };
}

/**
 * Starts the fake API and the worker processes, lets them all call at once, and reports what the
 * API saw. Every worker is gone when it returns (killed if it did not exit in time).
 */
export async function runRateLimited(options: RateLimitOptions): Promise<RateLimitResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const cap = options.cap ?? 2;
  const workerCount = options.workers ?? 4;
  const calls = options.callsPerWorker ?? 5;
  const api = await startFakeApi({ cap, latencyMs: options.latencyMs ?? 150 });
  const keyPrefix = `example:semaphore-rate-limit:${randomUUID().slice(0, 8)}:`;
  const children: ChildProcess[] = [];
  try {
    const workers = Array.from({ length: workerCount }, (_, index) => {
      const config: WorkerConfig = { name: `worker-${index + 1}`, redisUrl: options.redisUrl, keyPrefix, apiUrl: api.url, cap, calls };
      const child = fork(WORKER_ENTRY, [JSON.stringify(config)], {
        cwd: EXAMPLE_ROOT,
        execArgv: ['--conditions=@fencelock/source', '--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      if (child.pid !== undefined) options.onWorkerStarted?.(child.pid);
      children.push(child);
      return { name: config.name, child, ready: nextMessage(child, 'ready', READY_TIMEOUT_MS) };
    });
    await Promise.all(workers.map((worker) => worker.ready));
    print(`${workerCount} workers, ${calls} calls each, an API that refuses more than ${cap} calls in flight`);
    const done = workers.map((worker) => nextMessage(worker.child, 'done', DONE_TIMEOUT_MS));
    for (const worker of workers) worker.child.send({ type: 'go' } satisfies CoordinatorMessage);
    const reports = (await Promise.all(done)).map((message) => (message as Extract<WorkerMessage, { type: 'done' }>).report);
    for (const report of reports) {
      print(`  ${report.name}: ${report.ok} calls answered, ${report.refused} refused, ${report.waited} waited for a permit; tokens ${report.tokens.join(', ')}`);
    }
    print(`the API saw at most ${api.maxInFlight()} calls in flight (cap ${cap}) and refused ${api.refused()}`);
    return { cap, reports, api: { maxInFlight: api.maxInFlight(), refused: api.refused(), calls: api.calls() } };
  } finally {
    await Promise.all(children.map((child) => stop(child)));
    await api.close();
  }
}

/** The worker's next message of `type` (a `failed` message or an early exit rejects), within `timeoutMs`. */
function nextMessage(child: ChildProcess, type: WorkerMessage['type'], timeoutMs: number): Promise<WorkerMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`a worker sent no "${type}" within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: WorkerMessage): void => {
      if (message.type === type) finish(undefined, message);
      else if (message.type === 'failed') finish(new Error(message.error));
    };
    const onExit = (code: number | null): void => finish(new Error(`a worker exited (${String(code)}) before "${type}"`));
    function finish(error: Error | undefined, message?: WorkerMessage): void {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error !== undefined) reject(error);
      else resolve(message as WorkerMessage);
    }
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Waits (5 s at most) for a worker to exit, then kills it. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
