/** Where `fencelock` writes: a stream, or anything with `write` (tests collect text). */
export interface CliOutput {
  /** Writes text as given (fencelock adds its own newlines). */
  write(text: string): unknown;
  /** True for a terminal: the waiting status line is only drawn on one. */
  readonly isTTY?: boolean;
}

/** The signals `fencelock hold` catches: it forwards them to the command, or stops waiting. */
export const HANDLED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** One of {@link HANDLED_SIGNALS}. */
export type HandledSignal = (typeof HANDLED_SIGNALS)[number];

/** The outside world of one `runCli` call. */
export interface CliIo {
  /** Command output (`inspect`, `--help`, `--version`). */
  readonly stdout: CliOutput;
  /** Errors, progress and `--verbose` lines. */
  readonly stderr: CliOutput;
  /** Environment variables: the `FENCELOCK_*` settings, and the command's environment. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Subscribes to a signal sent to this process; returns the unsubscribe function. While a listener
   * is attached the signal does not end the process.
   * @default process.on / process.off
   */
  readonly onSignal?: (signal: HandledSignal, listener: () => void) => () => void;
}

/** The real process: its stdout, stderr, environment and signals. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    onSignal: processSignal,
  };
}

/** Subscribes to `signal` on the current process. */
export function processSignal(signal: HandledSignal, listener: () => void): () => void {
  process.on(signal, listener);
  return () => {
    process.off(signal, listener);
  };
}
