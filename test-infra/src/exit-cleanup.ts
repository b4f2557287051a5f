/**
 * Last-resort cleanup for dedicated servers a test forgot to stop: on process exit, kill
 * every still-registered child by PID and delete the registered temp directories. Only
 * synchronous work is possible in an 'exit' listener, hence SIGKILL and rmSync.
 */
import { rmSync } from 'node:fs';
import { signal } from './processes.js';

const livePids = new Set<number>();
const tempDirs = new Set<string>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    for (const pid of livePids) {
      // A paused (SIGSTOP) process is killed by SIGKILL too, but resuming first keeps the
      // rule simple and matches what `infra down` does.
      signal(pid, 'SIGCONT');
      signal(pid, 'SIGKILL');
    }
    livePids.clear();
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    tempDirs.clear();
  });
}

/** Registers a child PID to be killed at exit unless {@link forgetPid} is called first. */
export function rememberPid(pid: number): void {
  install();
  livePids.add(pid);
}

/** The child was stopped properly (or has exited): nothing to do for it at exit. */
export function forgetPid(pid: number): void {
  livePids.delete(pid);
}

/** Registers a temp directory to delete at exit unless {@link forgetTempDir} is called first. */
export function rememberTempDir(dir: string): void {
  install();
  tempDirs.add(dir);
}

/** The directory was removed properly. */
export function forgetTempDir(dir: string): void {
  tempDirs.delete(dir);
}
