/**
 * Spawning server processes and signalling them by PID. Everything that signals a PID first
 * checks that the PID is still the process we started (same working directory), because a
 * recorded PID may have been reused by an unrelated process since.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { sleep } from './wait.js';

/** How to run one server process. */
export interface ServerSpec {
  /** Short label for messages ("redis 127.0.0.1:6379"). */
  readonly label: string;
  readonly command: string;
  readonly args: readonly string[];
  /**
   * Working directory; every server gets its own (its data dir), which is also how we
   * recognise the process later: `/proc/<pid>/cwd` must point there.
   */
  readonly cwd: string;
  /** File that receives stdout and stderr (appended). */
  readonly logFile: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** Options of {@link spawnServer}. */
export interface SpawnOptions {
  /**
   * Detached servers get their own session and outlive this process (the CLI's shared
   * topology). Attached ones belong to a test and are killed when it exits.
   */
  readonly detached: boolean;
}

/** Starts `spec` with stdout/stderr appended to its log file. Does not wait for readiness. */
export function spawnServer(spec: ServerSpec, options: SpawnOptions): ChildProcess {
  mkdirSync(spec.cwd, { recursive: true, mode: 0o700 });
  mkdirSync(dirname(spec.logFile), { recursive: true });
  const log = openSync(spec.logFile, 'a');
  try {
    const child = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd,
      detached: options.detached,
      stdio: ['ignore', log, log],
      env: { ...process.env, ...spec.env },
    });
    if (options.detached) child.unref();
    return child;
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(log);
  }
}

/** Resolves when `child` has exited (immediately if it already has). */
export function childExited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** True when a process with this PID exists (zombies included). */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The one-letter state from `/proc/<pid>/stat` (R, S, T, Z…), or undefined if gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may contain spaces; the state follows the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) || undefined;
  } catch {
    return undefined;
  }
}

/** True when `pid` is alive, not a zombie, and runs in `cwd` (so it is the server we started). */
export function isOurProcess(pid: number, cwd: string): boolean {
  const state = processState(pid);
  if (state === undefined || state === 'Z' || state === 'X') return false;
  try {
    // A deleted directory reads as "<path> (deleted)".
    const actual = readlinkSync(`/proc/${pid}/cwd`).replace(/ \(deleted\)$/, '');
    return actual === cwd;
  } catch {
    return false;
  }
}

/** Sends `signal` to `pid`, ignoring "no such process". */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Waits (bounded) until `pid` is in or out of the stopped state `T`; true on success. */
export async function waitForStopState(pid: number, stopped: boolean, timeoutMs = 5_000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (let i = 0; i < 1_000; i += 1) {
    const state = processState(pid);
    if (state === undefined || state === 'Z') return !stopped;
    if ((state === 'T') === stopped) return true;
    if (performance.now() >= deadline) return false;
    await sleep(5);
  }
  return false;
}

/** Options of {@link terminatePid}. */
export interface TerminateOptions {
  /** Skip SIGTERM and send SIGKILL at once (test data we do not need to flush). */
  readonly immediate?: boolean;
  /** How long to wait after the stop signal before SIGKILL. Default 5 s. */
  readonly graceMs?: number;
  /** The polite stop signal (PostgreSQL's fast shutdown is SIGINT; its SIGTERM waits for clients). Default SIGTERM. */
  readonly stopSignal?: NodeJS.Signals;
}

/**
 * Stops one process we started, identified by PID and working directory: SIGCONT first (a
 * test may have paused it, and a stopped process never handles SIGTERM), SIGTERM (or
 * `stopSignal`), then SIGKILL after a bounded wait. Does nothing when the PID is no longer ours.
 *
 * @returns true when it had to be signalled, false when it was already gone (or not ours).
 */
export async function terminatePid(pid: number, cwd: string, options: TerminateOptions = {}): Promise<boolean> {
  if (!isOurProcess(pid, cwd)) return false;
  signal(pid, 'SIGCONT');
  if (!options.immediate) {
    signal(pid, options.stopSignal ?? 'SIGTERM');
    if (await waitForExit(pid, cwd, options.graceMs ?? 5_000)) return true;
  }
  if (isOurProcess(pid, cwd)) signal(pid, 'SIGKILL');
  if (!(await waitForExit(pid, cwd, 5_000))) {
    throw new Error(`process ${pid} (cwd ${cwd}) survived SIGKILL for 5 s`);
  }
  return true;
}

/** Waits (bounded) until `pid` is no longer our live process; true when it is gone. */
async function waitForExit(pid: number, cwd: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (let i = 0; i < 2_000; i += 1) {
    if (!isOurProcess(pid, cwd)) return true;
    if (performance.now() >= deadline) return false;
    await sleep(10);
  }
  return !isOurProcess(pid, cwd);
}
