import { readFileSync } from 'node:fs';

/** True while `pid` is a child of this process (and so ours to kill): /proc/<pid>/stat names its parent. */
export function isChildOfThisProcess(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (in parentheses, which may contain spaces): state, ppid, …
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid;
  } catch {
    return false;
  }
}

/**
 * Kills (SIGKILL, after SIGCONT for a frozen one) the processes of `pids` that are still children of
 * this process: what a failed or timed-out test left behind. A pid that exited and was reused by
 * someone else's process is never a child of ours, so it is left alone.
 */
export function killChildLeftovers(pids: readonly number[]): void {
  for (const pid of pids.filter(isChildOfThisProcess)) {
    try {
      process.kill(pid, 'SIGCONT');
      process.kill(pid, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
}
