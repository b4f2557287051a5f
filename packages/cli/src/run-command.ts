import { spawn } from 'node:child_process';
import { HANDLED_SIGNALS, type HandledSignal } from './cli-io.js';
import { groupRunning } from './process-group.js';

/** How a command run under the lock ended. */
export type CommandOutcome =
  /** It ran and exited with `code`, or was ended by `signal`. */
  | { readonly kind: 'exited'; readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly stoppedForLoss: boolean }
  /** It could not be started (`ENOENT`: not found, `EACCES`: not executable). */
  | { readonly kind: 'not-started'; readonly error: NodeJS.ErrnoException };

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  /** The program and its arguments; run directly, never through a shell. */
  readonly command: readonly string[];
  /** The command's whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * `false` (default): the command leads its own process group (and session), and every signal
   * goes to the whole group, so a shell script's children stop too. `true`: it stays in our process
   * group and can use the terminal; signals then reach only the command's own process.
   */
  readonly foreground: boolean;
  /**
   * Aborted when the lock is lost: the command gets SIGTERM, then SIGKILL after `killGraceMs`. Without
   * `foreground`, the promise resolves only once its whole group is gone (or SIGKILL was sent).
   */
  readonly lost: AbortSignal;
  /** Time between SIGTERM and SIGKILL after a loss, in ms. */
  readonly killGraceMs: number;
  /** Subscribes to a signal sent to fencelock (forwarded to the command); returns the unsubscribe. */
  readonly onSignal: (signal: HandledSignal, listener: () => void) => () => void;
  /** Told when the command is stopped because the lock was lost, with the signal sent. */
  readonly onStop?: (signal: NodeJS.Signals) => void;
}

/**
 * Runs the command with inherited stdin/stdout/stderr while the lock is held; forwards SIGINT,
 * SIGTERM and SIGHUP to it; stops it when the lock is lost; resolves when it has exited (after a
 * loss: when its process group is empty, or at the SIGKILL).
 */
export function runCommand(options: RunCommandOptions): Promise<CommandOutcome> {
  const [program, ...args] = options.command;
  const child = spawn(program as string, args, {
    stdio: 'inherit',
    env: options.env,
    detached: !options.foreground,
  });
  const send = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      // A negative pid addresses the process group the command leads.
      if (options.foreground) child.kill(signal);
      else process.kill(-child.pid, signal);
    } catch {
      // ESRCH: it (or its whole group) is already gone.
    }
  };

  return new Promise((resolve) => {
    let started = false;
    let stoppedForLoss = false;
    let killSent = false;
    let killTimer: NodeJS.Timeout | undefined;
    let groupPoll: NodeJS.Timeout | undefined;
    let exited: CommandOutcome | undefined;
    const unsubscribe = HANDLED_SIGNALS.map((signal) => options.onSignal(signal, () => send(signal)));

    const finish = (outcome: CommandOutcome): void => {
      options.lost.removeEventListener('abort', stopForLoss);
      for (const off of unsubscribe) off();
      clearTimeout(killTimer);
      clearInterval(groupPoll);
      resolve(outcome);
    };
    const stopForLoss = (): void => {
      if (stoppedForLoss) return;
      stoppedForLoss = true;
      options.onStop?.('SIGTERM');
      send('SIGTERM');
      killTimer = setTimeout(() => {
        killSent = true;
        options.onStop?.('SIGKILL');
        send('SIGKILL');
        if (exited !== undefined) finish(exited);
      }, options.killGraceMs);
    };

    child.once('spawn', () => {
      started = true;
      if (options.lost.aborted) stopForLoss();
      else options.lost.addEventListener('abort', stopForLoss, { once: true });
    });
    child.once('error', (error: NodeJS.ErrnoException) => {
      // Errors after the start (a failed kill) change nothing: 'exit' still comes.
      if (!started) finish({ kind: 'not-started', error });
    });
    child.once('exit', (code, signal) => {
      const outcome: CommandOutcome = { kind: 'exited', code, signal, stoppedForLoss };
      exited = outcome;
      if (!stoppedForLoss || options.foreground || child.pid === undefined) return finish(outcome);
      // The lock is gone, and a shell often dies of SIGTERM at once while its children clean up:
      // what is left of the group gets the rest of the same grace, then SIGKILL (from the timer).
      if (killSent) send('SIGKILL');
      if (killSent || !groupRunning(child.pid)) return finish(outcome);
      const groupId = child.pid;
      groupPoll = setInterval(() => {
        if (!groupRunning(groupId)) finish(outcome);
      }, GROUP_POLL_MS);
    });
  });
}

/** How often to look whether the command's process group is empty, once the command has exited. */
const GROUP_POLL_MS = 25;
