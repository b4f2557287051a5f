import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { findPostgresBinDir } from '@fencelock/test-infra';
import { postgresUrl } from './pg.js';

/**
 * An interactive `psql` session (Debian's), driven line by line: the other program of the interop
 * tests. Each `run` sends SQL followed by an `\echo` marker and resolves the output before it.
 */
export class PsqlSession {
  readonly #child: ChildProcessWithoutNullStreams;
  #output = '';
  #waiting: (() => void) | undefined;
  #marker = 0;

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      this.#output += chunk;
      this.#waiting?.();
    });
  }

  /** Starts `psql` on the shared server: unaligned, tuples only, stops at the first error. */
  static start(): PsqlSession {
    const bin = findPostgresBinDir();
    if (bin === undefined) throw new Error('psql not found (install Debian postgresql-client)');
    const child = spawn(join(bin, 'psql'), ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', postgresUrl], { stdio: 'pipe' });
    return new PsqlSession(child);
  }

  /** Runs `sql` and resolves what it printed (trimmed), within `timeoutMs`. */
  async run(sql: string, timeoutMs = 10_000): Promise<string> {
    const marker = `__done_${(this.#marker += 1)}__`;
    this.#child.stdin.write(`${sql}\n\\echo ${marker}\n`);
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`psql did not finish "${sql}" within ${timeoutMs} ms; output: ${this.#output}`)), timeoutMs);
        const check = (): void => {
          if (this.#output.includes(marker)) resolve();
        };
        this.#waiting = check;
        check();
      });
    } finally {
      clearTimeout(timer);
      this.#waiting = undefined;
    }
    const end = this.#output.indexOf(marker);
    const printed = this.#output.slice(0, end).trim();
    this.#output = this.#output.slice(end + marker.length).replace(/^\n/, '');
    return printed;
  }

  /** Ends psql (its session and every lock it held go with it) and waits for it to exit. */
  async quit(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.stdin.end('\\q\n');
    await exited;
  }
}
