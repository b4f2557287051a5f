import { isLockError, LockErrorCode, type LockError } from '@fencelock/core';
import { addressSource, describeBackend, type BackendConfig } from './backend-config.js';
import { ExitCode } from './exit-codes.js';
import { UsageError } from './usage-error.js';

/** What `fencelock` prints and returns for an error. */
export interface ErrorReport {
  /** The exit status. */
  readonly exitCode: number;
  /** Lines for stderr, without the trailing newline. */
  readonly lines: readonly string[];
}

/** What the error report may mention. */
export interface ErrorContext {
  /** The backend in use, when it is known. */
  readonly backend?: BackendConfig;
  /** The key in use, when there is one. */
  readonly key?: string;
  /** Print the stack and the chain of causes. */
  readonly debug?: boolean;
  /** The exit status for a lock not acquired (`--conflict-exit-code`). */
  readonly conflictExitCode?: number;
  /** The key is a counting semaphore's (`hold --permits`, `inspect --semaphore`), not a lock's. */
  readonly semaphore?: boolean;
  /** The key is an election's name (`elect`, `inspect --election`), not a lock's. */
  readonly election?: boolean;
}

/**
 * Turns any error into one readable line — `fencelock: LOCK_TIMEOUT: <message>` — plus a one-line
 * hint and the exit status that matches its code. Stack traces only with `debug`.
 */
export function describeError(error: unknown, context: ErrorContext = {}): ErrorReport {
  if (error instanceof UsageError) {
    const help = error.command === undefined ? 'fencelock --help' : `fencelock ${error.command} --help`;
    return { exitCode: ExitCode.USAGE, lines: [`fencelock: ${error.message}`, `  see: ${help}`] };
  }
  const lines: string[] = [];
  let exitCode: number = ExitCode.INTERNAL;
  if (isLockError(error)) {
    lines.push(`fencelock: ${error.code}: ${error.message}`);
    exitCode = exitCodeOf(error, context);
    const hint = hintFor(error, context);
    if (hint !== undefined) lines.push(`  hint: ${hint}`);
  } else {
    lines.push(`fencelock: unexpected error: ${error instanceof Error ? error.message : String(error)}`);
    lines.push('  hint: run again with --debug for details, and report it if it repeats');
  }
  if (context.debug) lines.push(...debugLines(error));
  return { exitCode, lines };
}

function exitCodeOf(error: LockError, context: ErrorContext): number {
  switch (error.code) {
    case LockErrorCode.TIMEOUT:
      return context.conflictExitCode ?? ExitCode.NOT_ACQUIRED;
    case LockErrorCode.LOST:
      return ExitCode.LOCK_LOST;
    case LockErrorCode.BACKEND_UNAVAILABLE:
    case LockErrorCode.QUORUM_NOT_REACHED:
      return ExitCode.BACKEND_UNAVAILABLE;
    case LockErrorCode.INVALID_ARGUMENT:
    case LockErrorCode.UNSUPPORTED:
    // A --permits other than the one the semaphore's holders agreed on: the flag is wrong, not the moment.
    case LockErrorCode.LIMIT_MISMATCH:
      return ExitCode.USAGE;
    case LockErrorCode.FORBIDDEN:
      return ExitCode.FORBIDDEN;
    case LockErrorCode.KEY_CONFLICT:
      return ExitCode.KEY_CONFLICT;
    default:
      return ExitCode.INTERNAL;
  }
}

function hintFor(error: LockError, context: ErrorContext): string | undefined {
  const key = context.key === undefined ? '<key>' : shellWord(context.key);
  switch (error.code) {
    case LockErrorCode.TIMEOUT:
      if (context.election === true) return `another campaigner leads; see who with: fencelock inspect --election ${key} (wait longer with --wait, or give no --wait to wait until elected)`;
      return context.semaphore === true
        ? `other processes hold its permits; see who with: fencelock inspect --semaphore ${key} (wait longer with --wait, e.g. --wait 5m)`
        : `another process holds it; see who with: fencelock inspect ${key} (wait longer with --wait, e.g. --wait 5m)`;
    case LockErrorCode.LIMIT_MISMATCH:
      return `every holder of a semaphore must give the same --permits; see the limit in use with: fencelock inspect --semaphore ${key}`;
    case LockErrorCode.LOST:
      if (context.election === true) return 'another campaigner may lead now; protect what the command writes with $FENCELOCK_TERM';
      return 'another process may hold the lock now; protect what the command writes with $FENCELOCK_TOKEN';
    case LockErrorCode.BACKEND_UNAVAILABLE: {
      if (context.backend === undefined) return 'is the server running?';
      const { flag, env } = addressSource(context.backend.backend);
      return `is ${describeBackend(context.backend)} running? Choose the backend with --backend or FENCELOCK_BACKEND, its address with --${flag} or ${env}`;
    }
    case LockErrorCode.FORBIDDEN:
      return 'check the user and password (--user, --password-file or FENCELOCK_PASSWORD), the TLS files (--tls-ca, --tls-cert, --tls-key) and what the user is allowed on the backend';
    case LockErrorCode.KEY_CONFLICT:
      return 'something else stores data where this lock keeps its keys (the message names them); lock another key, or remove that value if it is stray';
    case LockErrorCode.QUORUM_NOT_REACHED:
      return 'fewer than a majority of the Redlock masters answered; check that most of them are running';
    case LockErrorCode.UNSUPPORTED:
      if (context.election === true) return 'this backend has no leader elections; see fencelock elect --help';
      return context.semaphore === true
        ? 'this backend cannot do that (semaphores need a backend that has them; --take above 1 one with multi-permit semaphores); see fencelock hold --help'
        : 'this backend cannot do that (shared locks need etcd, zookeeper or postgres); see fencelock hold --help';
    case LockErrorCode.INVALID_ARGUMENT:
      return 'check the key and the flags; see fencelock --help';
    default:
      return undefined;
  }
}

function debugLines(error: unknown): string[] {
  const lines: string[] = [];
  let current: unknown = error;
  // A cause chain is short; the bound only guards against a cycle.
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth += 1) {
    const text = current instanceof Error ? (current.stack ?? `${current.name}: ${current.message}`) : String(current);
    lines.push(...(depth === 0 ? text : `caused by: ${text}`).split('\n').map((line) => `  ${line}`));
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines;
}

/** The key quoted for a shell when it needs it, so the hint can be pasted. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
