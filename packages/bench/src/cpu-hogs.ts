/**
 * CPU load for the stress section's loaded runs: N child processes (default 3, `BENCH_HOGS`) that
 * each spin a core (src/cpu-hog.ts). Each hog bounds itself (its own deadline, and it exits when
 * the IPC channel to this process closes), and {@link CpuHogs.stop} ends the ones still running by
 * the PIDs this module started — never any other process.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { boundedWait } from './bounded-wait.js';
import type { HogMessage } from './cpu-hog.js';

/** How many hogs, and for how long at most. */
export interface CpuHogOptions {
  /** Hog processes (default 3). */
  readonly count?: number;
  /** Each hog's own deadline, ms: it exits by itself then, whether or not it was stopped. */
  readonly maxMs: number;
  /** Spin slice, ms: how often a hog yields to notice its parent going away (default 50). */
  readonly sliceMs?: number;
  /** Longest wait for every hog to report its first slice, ms (default 15_000: a fork loads tsx). */
  readonly readyMs?: number;
}

/** What one hog did. */
export interface CpuHogReport {
  readonly pid: number;
  /** Slices it reported spinning. */
  readonly slices: number;
  /** Its CPU time (user + system) at its last report, ms. */
  readonly cpuMs: number;
  /** How it ended: `exit <code>` (by itself) or `signal <name>` (stopped). */
  readonly ended: string;
}

/** Running hogs. */
export interface CpuHogs {
  /** The PIDs of the hogs this call started. */
  readonly pids: readonly number[];
  /** Resolves once every hog has exited, by itself (its deadline) or stopped. */
  readonly exited: Promise<void>;
  /** Ends every hog still running (SIGTERM by PID, then SIGKILL), waits for them to exit; idempotent. */
  stop(): Promise<CpuHogReport[]>;
}

const HOG = fileURLToPath(new URL('./cpu-hog.ts', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const EXIT_GRACE_MS = 2_000;

interface Tracked {
  readonly child: ChildProcess;
  readonly pid: number;
  slices: number;
  cpuMs: number;
  readonly exited: Promise<string>;
  readonly firstSlice: Promise<void>;
}

const hasExited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

const waitFor = (promises: readonly Promise<unknown>[], timeoutMs: number): Promise<void> => boundedWait(Promise.allSettled(promises), timeoutMs);

function track(child: ChildProcess): Tracked {
  const pid = child.pid;
  if (pid === undefined) throw new Error('a CPU hog did not start (no PID)');
  let sawSlice: () => void = () => undefined;
  const tracked: Tracked = {
    child,
    pid,
    slices: 0,
    cpuMs: 0,
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal === null ? `exit ${code}` : `signal ${signal}`))),
    firstSlice: new Promise((resolve) => (sawSlice = resolve)),
  };
  child.on('message', (message: HogMessage) => {
    if (message.type !== 'spinning') return;
    tracked.slices = message.slices;
    tracked.cpuMs = message.cpuMs;
    sawSlice();
  });
  // A hog that failed to start must not crash the bench through an unhandled 'error' event.
  child.on('error', () => undefined);
  return tracked;
}

/**
 * Starts the hogs and resolves once every one of them has spun its first slice (so a measurement
 * started next really runs under load). Throws, after stopping whatever started, if they do not
 * all report within `readyMs`.
 */
export async function startCpuHogs(options: CpuHogOptions): Promise<CpuHogs> {
  const count = options.count ?? 3;
  const sliceMs = options.sliceMs ?? 50;
  if (!Number.isInteger(count) || count < 0 || count > 64) throw new RangeError('count must be an integer in [0, 64]');
  if (!(options.maxMs > 0)) throw new RangeError('maxMs must be positive');
  const hogs: Tracked[] = [];
  // If this process ends without stop(), kill what is left (the IPC channel closing ends them too).
  const killLeft = (): void => {
    for (const hog of hogs) {
      try {
        if (!hasExited(hog.child)) process.kill(hog.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  };
  process.once('exit', killLeft);
  let stopping: Promise<CpuHogReport[]> | undefined;
  const stop = (): Promise<CpuHogReport[]> => {
    stopping ??= (async () => {
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        const running = hogs.filter((hog) => !hasExited(hog.child));
        for (const hog of running) {
          try {
            process.kill(hog.pid, signal);
          } catch {
            // Exited between the check and the kill: nothing to stop.
          }
        }
        await waitFor(running.map((hog) => hog.exited), EXIT_GRACE_MS);
      }
      process.off('exit', killLeft);
      return Promise.all(
        hogs.map(async (hog) => ({
          pid: hog.pid,
          slices: hog.slices,
          cpuMs: Math.round(hog.cpuMs),
          ended: hasExited(hog.child) ? await hog.exited : 'still running',
        })),
      );
    })();
    return stopping;
  };
  try {
    for (let index = 0; index < count; index += 1) {
      hogs.push(
        track(
          fork(HOG, [String(options.maxMs), String(sliceMs)], {
            cwd: PACKAGE_DIR,
            execArgv: ['--import', 'tsx'],
            stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          }),
        ),
      );
    }
    const readyMs = options.readyMs ?? 15_000;
    // A hog that dies before spinning must not make this wait the whole readyMs.
    await waitFor(hogs.map((hog) => Promise.race([hog.firstSlice, hog.exited])), readyMs);
    const silent = hogs.filter((hog) => hog.slices === 0);
    if (silent.length > 0) throw new Error(`${silent.length} of ${count} CPU hogs did not start spinning within ${readyMs} ms`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { pids: hogs.map((hog) => hog.pid), exited: Promise.all(hogs.map((hog) => hog.exited)).then(() => undefined), stop };
}

/**
 * Runs `work` while `count` hogs spin (started first, stopped when `work` settles, whatever it
 * does); `maxMs` bounds the hogs themselves in case this process cannot stop them.
 */
export async function underCpuLoad<T>(count: number, maxMs: number, work: () => Promise<T>): Promise<{ readonly result: T; readonly hogs: CpuHogReport[] }> {
  const hogs = await startCpuHogs({ count, maxMs });
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await hogs.stop();
    throw error;
  }
  return { result, hogs: await hogs.stop() };
}
