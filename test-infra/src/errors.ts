/** Errors that carry what a human needs to see: the tail of the server's log. */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** An infrastructure failure (server did not start, port taken, binary missing…). */
export class InfraError extends Error {
  override readonly name = 'InfraError';
}

/**
 * The last `lines` lines of a log file (at most the last 16 KiB are read), or a note that
 * the file could not be read. Synchronous because it is used while building error messages.
 */
export function logTail(path: string, lines = 20): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, 16 * 1024);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const text = buffer.toString('utf8').trimEnd();
    return text.split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(log ${path} unreadable: ${(error as Error).message})`;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `--- last lines of <path> ---` followed by the tail, for appending to error messages. */
export function formatLogTail(path: string, lines = 20): string {
  return `--- last lines of ${path} ---\n${logTail(path, lines)}`;
}
