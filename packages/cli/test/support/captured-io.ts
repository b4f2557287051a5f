import type { CliIo } from '../../src/index.js';

/** A {@link CliIo} that collects what `runCli` writes. */
export interface CapturedIo extends CliIo {
  out(): string;
  err(): string;
}

/** Collects stdout and stderr; `tty` makes stderr look like a terminal. */
export function capturedIo(env: Record<string, string | undefined>, options: { tty?: boolean } = {}): CapturedIo {
  let out = '';
  let err = '';
  return {
    env,
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text), isTTY: options.tty === true },
    // In-process runs never take over this test process's signals.
    onSignal: () => () => undefined,
    out: () => out,
    err: () => err,
  };
}
