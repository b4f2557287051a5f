import { constants } from 'node:os';

/**
 * The exit statuses of `fencelock`. Besides these, `hold` exits with the command's own status, or
 * 128 + n when the command (or fencelock while waiting) was ended by signal n, as shells report it.
 * The numbers follow BSD's sysexits.h where one fits, so they rarely clash with a command's own.
 */
export const ExitCode = {
  /** Everything went as asked (for `hold`: the command exited with 0). */
  OK: 0,
  /** Bad usage: an unknown flag, a malformed duration or address, an empty key, no command. Nothing was contacted. (EX_USAGE) */
  USAGE: 64,
  /** A key the lock uses holds another kind of value, written by something else (`LOCK_KEY_CONFLICT`). (EX_DATAERR) */
  KEY_CONFLICT: 65,
  /** The backend could not be reached or did not answer (a Redlock quorum included). (EX_UNAVAILABLE) */
  BACKEND_UNAVAILABLE: 69,
  /** The backend refused the credentials, the certificates or the operation (`LOCK_FORBIDDEN`). (EX_NOPERM) */
  FORBIDDEN: 77,
  /** An unexpected internal error. (EX_SOFTWARE) */
  INTERNAL: 70,
  /** The lock was not acquired: held elsewhere with `--no-wait`, or `--wait` ran out. Changeable with `--conflict-exit-code`. (EX_TEMPFAIL) */
  NOT_ACQUIRED: 75,
  /** The lock was lost while the command ran; the command was stopped. */
  LOCK_LOST: 76,
  /** The command was found but could not be run (permission denied). (as shells) */
  CANNOT_EXECUTE: 126,
  /** The command was not found. (as shells) */
  COMMAND_NOT_FOUND: 127,
} as const;

/** One of the {@link ExitCode} values. */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The status a shell reports for a process ended by `signal`: 128 + its number (SIGINT → 130, SIGTERM → 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 1);
}
