import { spawn } from 'node:child_process';

/** Options of {@link runProcess}. */
export interface RunProcessOptions {
  /** Working directory of the child. */
  readonly cwd: string;
  /** The child (and its whole process group) is killed with SIGKILL after this many ms. */
  readonly timeoutMs: number;
  /** The child's environment. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

/** What a finished child process left behind. */
export interface RunProcessResult {
  /** Exit code, or `null` when the child died of a signal. */
  readonly code: number | null;
  /** The signal that ended the child, if any. */
  readonly signal: NodeJS.Signals | null;
  /** Whether the child was killed because it ran past `timeoutMs`. */
  readonly timedOut: boolean;
  /** Everything the child wrote to stdout (the last {@link OUTPUT_LIMIT_CHARS} characters). */
  readonly stdout: string;
  /** Everything the child wrote to stderr (the last {@link OUTPUT_LIMIT_CHARS} characters). */
  readonly stderr: string;
}

/** How much of each output stream is kept, in characters; npm can be chatty. */
export const OUTPUT_LIMIT_CHARS = 64 * 1024;

/** How long the output pipes may stay open after the child exits, in ms. */
export const PIPE_GRACE_MS = 5_000;

/** Stable codes of {@link ProcessError}. */
export type ProcessErrorCode = 'PROCESS_FAILED' | 'PROCESS_TIMEOUT';

/** A child process that exited non-zero, died of a signal or ran out of time. */
export class ProcessError extends Error {
  override readonly name = 'ProcessError';

  constructor(
    readonly code: ProcessErrorCode,
    readonly commandLine: string,
    readonly result: RunProcessResult,
  ) {
    const how = result.timedOut
      ? 'timed out'
      : result.signal === null
        ? `exited with ${result.code}`
        : `died of ${result.signal}`;
    super(`${commandLine} ${how}\n--- stdout\n${tail(result.stdout)}\n--- stderr\n${tail(result.stderr)}`);
  }
}

// Children still running, killed if the test process exits early (a failed hook, a crash), so
// no npm or node process outlives the test run.
const running = new Set<number>();
process.once('exit', () => {
  for (const pid of running) killGroup(pid);
});

/**
 * Runs a command without a shell and resolves when it ends, whatever its exit status. The child
 * leads its own process group, so a timeout also kills what it spawned (npm runs node, git, tar).
 */
export function runProcess(command: string, args: readonly string[], options: RunProcessOptions): Promise<RunProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout = keepTail(stdout + chunk);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = keepTail(stderr + chunk);
    });
    const pid = child.pid;
    if (pid !== undefined) running.add(pid);
    let settled = false;
    let pipeTimer: NodeJS.Timeout | undefined;
    const settle = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(pipeTimer);
      if (pid !== undefined) running.delete(pid);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({ code, signal, timedOut, stdout, stderr });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      if (pid !== undefined) killGroup(pid);
    }, options.timeoutMs);
    child.once('error', (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      reject(error);
    });
    // 'close' waits for the output pipes too; a grandchild that left the process group could
    // hold them open forever, so give them a bounded grace after the child itself exits.
    child.once('exit', (code, signal) => {
      pipeTimer = setTimeout(() => settle(code, signal), PIPE_GRACE_MS);
    });
    child.once('close', (code, signal) => settle(code, signal));
  });
}

/** {@link runProcess}, but rejects with a {@link ProcessError} (with both outputs) unless the child exits 0. */
export async function runChecked(command: string, args: readonly string[], options: RunProcessOptions): Promise<RunProcessResult> {
  const result = await runProcess(command, args, options);
  if (result.code !== 0 || result.timedOut) {
    throw new ProcessError(result.timedOut ? 'PROCESS_TIMEOUT' : 'PROCESS_FAILED', [command, ...args].join(' '), result);
  }
  return result;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone: nothing to do.
  }
}

function keepTail(text: string): string {
  return text.length > OUTPUT_LIMIT_CHARS ? text.slice(-OUTPUT_LIMIT_CHARS) : text;
}

function tail(text: string): string {
  return text.split('\n').slice(-40).join('\n');
}
