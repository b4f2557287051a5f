import { readFileSync } from 'node:fs';

/** The state letter of `pid` from `/proc/<pid>/stat` (`R`, `S`, `Z`…), or undefined once it is gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name in parentheses, which may itself contain spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** True while `pid` runs (a zombie waiting to be reaped counts as gone). */
export function isRunning(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== 'Z';
}
