/**
 * Bad command-line input, found before any network call. `runCli` prints its message with a pointer
 * to `--help` and exits with `ExitCode.USAGE` (64).
 */
export class UsageError extends Error {
  /** The command whose help the message points to (`hold`, `inspect`), if any. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}
