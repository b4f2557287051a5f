/**
 * PostgreSQL (Debian's `postgresql`) for the guarded-write examples: preparing and initialising a
 * throwaway data dir, and the server's command line. PostgreSQL refuses to run as root, so as root
 * both initdb and the server run as the `postgres` system user (through `setpriv`, which execs:
 * the PID we record is the server's own), in a temp dir that user owns — `.infra/` is private to
 * root and the server could not enter it, nor a checkout under a private home or mode-700 folder.
 * Nothing the server or initdb opens lives in the checkout: we open the logs and pass descriptors.
 */
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp } from 'node:fs/promises';
import { closeSync, openSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { POSTGRES_SYSTEM_USER, postgresSystemUser } from './binaries.js';
import { InfraError, formatLogTail } from './errors.js';
import { LOOPBACK } from './ports.js';
import { tempRootFor } from './reach.js';
import type { ServerSpec } from './processes.js';

/** How long initdb may take, in ms (about 2.5 s here; it writes a whole template database). */
export const INITDB_TIMEOUT_MS = 60_000;

// PostgreSQL reads the locale from the environment; "C" exists everywhere and initdb is told the same.
const POSTGRES_ENV = { LC_ALL: 'C', LANG: 'C' };

function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** `program args…`, prefixed so that it runs as the postgres system user when we are root. */
function asPostgresUser(program: string, args: readonly string[]): { command: string; args: string[] } {
  if (!runningAsRoot()) return { command: program, args: [...args] };
  return {
    command: 'setpriv',
    args: [`--reuid=${POSTGRES_SYSTEM_USER}`, `--regid=${POSTGRES_SYSTEM_USER}`, '--clear-groups', '--', program, ...args],
  };
}

/**
 * Creates an empty data dir the server may own and returns its real path: `preferred` when we are
 * not root, else a fresh `fencelock-postgres-*` temp dir owned by the postgres system user (mode
 * 0700, as the server demands), in os.tmpdir() or, when that user cannot enter it, in /tmp. The
 * caller deletes it when the server is stopped.
 */
export async function preparePostgresDataDir(preferred: string): Promise<string> {
  if (!runningAsRoot()) {
    await mkdir(preferred, { recursive: true, mode: 0o700 });
    return realpathSync(preferred);
  }
  const user = postgresSystemUser();
  if (user === undefined) throw new InfraError(`PostgreSQL refuses to run as root and there is no "${POSTGRES_SYSTEM_USER}" system user`);
  const dir = realpathSync(await mkdtemp(join(tempRootFor(user), 'fencelock-postgres-')));
  await chown(dir, user.uid, user.gid);
  await chmod(dir, 0o700);
  return dir;
}

/** What {@link initPostgresDataDir} needs. */
export interface PostgresInitOptions {
  /** Directory of `initdb` and `postgres` (see `findPostgresBinDir()`). */
  readonly binDir: string;
  /** An empty directory from {@link preparePostgresDataDir}. */
  readonly dataDir: string;
  /** Receives initdb's output (appended). */
  readonly logFile: string;
}

/**
 * Runs initdb: superuser `postgres`, trust authentication (the server listens on loopback only),
 * UTF-8, locale C, no fsync. Bounded by {@link INITDB_TIMEOUT_MS}.
 *
 * @throws InfraError with the tail of the log when initdb fails or times out.
 */
export async function initPostgresDataDir(options: PostgresInitOptions): Promise<void> {
  const { command, args } = asPostgresUser(join(options.binDir, 'initdb'), [
    '--pgdata', options.dataDir,
    '--username', 'postgres',
    '--auth', 'trust',
    '--encoding', 'UTF8',
    '--locale', 'C',
    '--no-sync',
    '--no-instructions',
  ]);
  const log = openSync(options.logFile, 'a');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(command, args, { cwd: options.dataDir, stdio: ['ignore', log, log], env: { ...process.env, ...POSTGRES_ENV } });
      const timer = setTimeout(() => child.kill('SIGKILL'), INITDB_TIMEOUT_MS);
      const fail = (why: string): void => reject(new InfraError(`initdb for ${options.dataDir} ${why}\n${formatLogTail(options.logFile)}`));
      child.once('error', (error) => {
        clearTimeout(timer);
        fail(`could not start: ${error.message}`);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else fail(signal ? `was killed by ${signal} (time limit ${INITDB_TIMEOUT_MS} ms)` : `exited with code ${String(code)}`);
      });
    });
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(log);
  }
}

/** What {@link postgresServerSpec} needs. */
export interface PostgresSpecOptions {
  /** Directory of the `postgres` program. */
  readonly binDir: string;
  readonly port: number;
  /** An initialised data dir; also the server's working directory and its unix socket directory. */
  readonly dataDir: string;
  readonly logFile: string;
}

/**
 * The server's command line: TCP on 127.0.0.1 only, its unix socket inside the data dir (not
 * /var/run/postgresql, which may not exist or belong to another cluster), and no durability —
 * test data is thrown away, so fsync, synchronous commit and full-page writes are off.
 */
export function postgresServerSpec(options: PostgresSpecOptions): ServerSpec {
  const { command, args } = asPostgresUser(join(options.binDir, 'postgres'), [
    '-D', options.dataDir,
    '-p', String(options.port),
    '-c', `listen_addresses=${LOOPBACK}`,
    '-c', `unix_socket_directories=${options.dataDir}`,
    '-c', 'fsync=off',
    '-c', 'synchronous_commit=off',
    '-c', 'full_page_writes=off',
    '-c', 'shared_buffers=16MB',
  ]);
  return {
    label: `postgres ${LOOPBACK}:${options.port}`,
    command,
    args,
    cwd: options.dataDir,
    logFile: options.logFile,
    env: POSTGRES_ENV,
  };
}
