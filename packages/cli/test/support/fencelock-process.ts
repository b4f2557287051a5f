import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@fencelock/test-infra';

/** The package root. */
export const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url));
/** The bin as test/global-setup.ts built it. */
export const BIN = fileURLToPath(new URL('../../.e2e-bin/bin.js', import.meta.url));
/** The fixture command the tests hold locks around. */
export const CRITICAL_SECTION = fileURLToPath(new URL('../fixtures/critical-section.mjs', import.meta.url));
/**
 * `--kill-grace` for tests that check a command got SIGTERM before SIGKILL: the command's handler must
 * get a turn on the CPU within the grace, which on a loaded 2-core CI machine can take more than a
 * few hundred ms. The tests wait for the command's exit, never for this time.
 */
export const KILL_GRACE = '2s';

/** A `fencelock` process started by a test. */
export interface FencelockProcess {
  readonly child: ChildProcess;
  /** Everything it wrote to stdout (and its command, which inherits stdout) so far. */
  stdout(): string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Its exit: the status, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stdout contains `text` (bounded). */
  waitForStdout(text: string, timeoutMs?: number): Promise<void>;
  /** Resolves once stderr contains `text` (bounded). */
  waitForStderr(text: string, timeoutMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();

/**
 * Starts the real `fencelock` bin as a user would run it (`node bin.js`, built from src/bin.ts by the
 * global setup), with piped stdio (so stderr is not a terminal).
 */
export function startFencelock(args: readonly string[], env: Record<string, string | undefined> = {}): FencelockProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: PACKAGE_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // 'close' also waits for the pipes, so all output is in when the test reads it.
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  const waitForText = (read: () => string, stream: string) => async (text: string, timeoutMs = 30_000) => {
    await waitFor(async () => (read().includes(text) ? true : undefined), {
      what: `fencelock ${args.join(' ')} to print ${JSON.stringify(text)} on ${stream}`,
      timeoutMs,
      intervalMs: 20,
      abortReason: () => (child.exitCode !== null || child.signalCode !== null) && !read().includes(text) ? `it exited (${child.exitCode ?? child.signalCode}); stdout: ${out} stderr: ${err}` : undefined,
    });
  };
  return { child, stdout: () => out, stderr: () => err, exited, waitForStdout: waitForText(() => out, 'stdout'), waitForStderr: waitForText(() => err, 'stderr') };
}

/** Runs `fencelock` to completion; bounded by the test's timeout. */
export async function runFencelock(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = startFencelock(args, env);
  const { code } = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/**
 * Kills every `fencelock` this test file started that still runs (by PID). Their commands notice
 * that their parent is gone and exit on their own (the fixture checks its parent).
 */
export async function killRunningFencelocks(): Promise<void> {
  const children = [...running];
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('close', resolve)))));
}
