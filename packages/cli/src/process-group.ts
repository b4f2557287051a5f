import { readFileSync, readdirSync } from 'node:fs';

/**
 * Whether a process of the group `groupId` still runs. A zombie does not count: once it has exited
 * it does nothing more, and a container's init may take long to reap it, or never do so. Where
 * `/proc` is missing (not Linux), any member counts, zombies included.
 */
export function groupRunning(groupId: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return groupHasMember(groupId);
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    if (stat !== undefined && stat.groupId === groupId && stat.state !== 'Z' && stat.state !== 'X') return true;
  }
  return false;
}

/** Whether any process, a zombie included, is in the group (it can be signalled). */
function groupHasMember(groupId: number): boolean {
  try {
    process.kill(-groupId, 0);
    return true;
  } catch {
    return false;
  }
}

/** The state letter and process group of one process, from `/proc/<pid>/stat`; undefined once it is gone. */
function readStat(pid: string): { readonly state: string; readonly groupId: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so split after the last ')'.
  const [state = '', , groupId = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state, groupId: Number(groupId) };
}
