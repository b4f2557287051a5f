import { processIo, type CliIo } from './cli-io.js';
import { describeError } from './describe-error.js';
import { helpText } from './help-text.js';
import { runHold } from './hold-command.js';
import { runInspect } from './inspect-command.js';
import { parseCommandLine } from './parse-command-line.js';
import { cliVersion } from './version.js';

/**
 * Runs `fencelock` with `argv` (the arguments after the program name) and resolves its exit status;
 * it never rejects and never calls `process.exit`. Bad input is refused before any network call.
 *
 * ```ts
 * const status = await runCli(['hold', 'reports:nightly', '--no-wait', '--', './report.sh']);
 * ```
 * @param io where output goes and which environment and signals apply. @default the current process
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let invocation: ReturnType<typeof parseCommandLine>;
  try {
    invocation = parseCommandLine(argv, io.env);
  } catch (error) {
    const report = describeError(error, { debug: argv.includes('--debug') });
    for (const line of report.lines) io.stderr.write(`${line}\n`);
    return report.exitCode;
  }
  switch (invocation.kind) {
    case 'help':
      io.stdout.write(helpText(invocation.command));
      return 0;
    case 'version':
      io.stdout.write(`${cliVersion()}\n`);
      return 0;
    case 'hold':
    case 'elect':
      return runHold(invocation.settings, io);
    case 'inspect':
      return runInspect(invocation.settings, io);
  }
}
