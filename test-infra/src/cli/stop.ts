/** Stopping what the CLI started: by recorded PID, checked against its working directory. */
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { sep } from 'node:path';
import { isOurProcess, signal, terminatePid } from '../processes.js';
import type { ServiceRecord } from '../state.js';
import { sleep } from '../wait.js';

/**
 * Stops every member of `record` and deletes its data. etcd gets SIGKILL at once: stopping all
 * members gracefully takes 8–9 s (each waits for a leadership transfer) and the data is
 * thrown away anyway. PostgreSQL gets SIGINT (fast shutdown: SIGTERM would wait for every client
 * to disconnect, and SIGKILL leaves its backends and shared memory behind). Others get SIGCONT,
 * SIGTERM, then SIGKILL after 5 s.
 *
 * @returns how many processes were signalled.
 */
export async function stopService(record: ServiceRecord): Promise<number> {
  const immediate = record.service === 'etcd';
  const stopSignal = record.service === 'postgres' ? 'SIGINT' : 'SIGTERM';
  const results = await Promise.all(record.members.map((m) => terminatePid(m.pid, m.cwd, { immediate, stopSignal, graceMs: 5_000 })));
  await rm(record.dataRoot, { recursive: true, force: true });
  // A member may live outside dataRoot (PostgreSQL run as root keeps its data in a temp dir the
  // postgres user owns); its working directory is its data dir.
  await Promise.all(record.members.map((m) => rm(m.cwd, { recursive: true, force: true })));
  return results.filter(Boolean).length;
}

/** PIDs of live processes whose working directory is inside `dir` (only servers we started live there). */
export function processesUnder(dir: string): { pid: number; cwd: string }[] {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return []; // no such directory: nothing can run inside it
  }
  const prefix = real.endsWith(sep) ? real : real + sep;
  const found: { pid: number; cwd: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`).replace(/ \(deleted\)$/, '');
    } catch {
      continue;
    }
    if (cwd.startsWith(prefix) && isOurProcess(pid, cwd)) found.push({ pid, cwd });
  }
  return found;
}

/**
 * Kills (SIGCONT + SIGKILL) strays under `dir` that no state record names — e.g. after the
 * state file was lost. Bounded wait for them to go.
 */
export async function sweepStrays(dir: string): Promise<number> {
  const strays = processesUnder(dir);
  for (const { pid } of strays) {
    signal(pid, 'SIGCONT');
    signal(pid, 'SIGKILL');
  }
  for (let i = 0; i < 100 && strays.some((s) => isOurProcess(s.pid, s.cwd)); i += 1) await sleep(20);
  return strays.length;
}
