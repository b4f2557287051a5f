/** Starting shared-topology processes that outlive the CLI, and waiting for them. */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { InfraError, formatLogTail } from '../errors.js';
import { spawnServer, type ServerSpec } from '../processes.js';
import type { MemberRecord } from '../state.js';
import { waitFor } from '../wait.js';

/** Readiness bound for the shared topology, per member and per cluster-level step. */
export const SHARED_READY_TIMEOUT_MS = 30_000;

/** A detached process we just spawned. */
export interface SpawnedMember {
  readonly record: MemberRecord;
  readonly child: ChildProcess;
  readonly spec: ServerSpec;
}

/** Spawns `spec` detached (own session, survives the CLI) with a fresh log file. */
export function spawnDetached(spec: ServerSpec, port: number): SpawnedMember {
  rmSync(spec.logFile, { force: true });
  const child = spawnServer(spec, { detached: true });
  // A spawn error (ENOENT) is emitted later as 'error'; unhandled, it would crash the CLI.
  child.on('error', () => undefined);
  if (child.pid === undefined) {
    throw new InfraError(`could not start ${spec.command} for ${spec.label} (is it installed?)`);
  }
  return {
    child,
    spec,
    record: { label: spec.label, pid: child.pid, port, cwd: spec.cwd, logFile: spec.logFile },
  };
}

/** Waits (≤ 30 s) until `probe` says ready; fails at once with the log tail if the process exits. */
export async function waitUntilReady(member: SpawnedMember, probe: () => Promise<boolean>): Promise<void> {
  await waitFor(async () => ((await probe()) ? true : undefined), {
    what: `${member.spec.label} to become ready`,
    timeoutMs: SHARED_READY_TIMEOUT_MS,
    intervalMs: 50,
    abortReason: () => {
      const { exitCode, signalCode } = member.child;
      if (exitCode !== null) return `the process exited with code ${exitCode}`;
      if (signalCode !== null) return `the process was killed by ${signalCode}`;
      return undefined;
    },
    describe: () => formatLogTail(member.spec.logFile),
  });
}
