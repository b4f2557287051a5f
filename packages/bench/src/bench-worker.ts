import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

/**
 * Forks one of the bench's TypeScript workers (`script`, a path) with an IPC channel, loading
 * fencelock as the parent does: the built packages under `pnpm bench` (FENCELOCK_BENCH_BUILT=1),
 * the sources in tests. `nodeOptions` go before the loader (V8 flags of a worker).
 */
export function forkBenchWorker(script: string, args: readonly string[], nodeOptions: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  return fork(script, [...args], {
    cwd: PACKAGE_DIR,
    env,
    execArgv: [...nodeOptions, ...(process.env['FENCELOCK_BENCH_BUILT'] === '1' ? [] : ['--conditions=@fencelock/source']), '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** Kills `child` unless it has exited already. */
export function killIfRunning(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill();
}
