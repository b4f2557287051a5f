/**
 * `.infra/state.json`: which shared-topology processes the CLI started (PID, port, working
 * directory), so that `down` and `run` stop exactly those and nothing else.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isOurProcess } from './processes.js';
import type { ServiceName } from './topology.js';

/** One process we started. */
export interface MemberRecord {
  readonly label: string;
  readonly pid: number;
  readonly port: number;
  /** Its working directory (= data dir); `/proc/<pid>/cwd` must match before we signal it. */
  readonly cwd: string;
  readonly logFile: string;
}

/** One service of the shared topology that we started. */
export interface ServiceRecord {
  readonly service: ServiceName;
  /** `up` leaves it running; `run` stops what it started when its command ends. */
  readonly startedBy: 'up' | 'run';
  /** PID of the CLI process that started it. */
  readonly ownerPid: number;
  readonly startedAt: string;
  /** Directory holding every member's data dir; deleted when the service is stopped. */
  readonly dataRoot: string;
  readonly members: readonly MemberRecord[];
}

/** The whole state file. */
export interface InfraState {
  readonly version: 1;
  readonly services: Partial<Record<ServiceName, ServiceRecord>>;
}

/** The monorepo root: the nearest directory above this file holding pnpm-workspace.yaml. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  // Bounded by the depth of the path.
  for (let i = 0; i < 20; i += 1) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error('cannot find the monorepo root (pnpm-workspace.yaml) above test-infra');
}

/** `<repo>/.infra`, or `FENCELOCK_INFRA_DIR` when set. Logs, data dirs and the state live here. */
export function infraDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const override = env.FENCELOCK_INFRA_DIR?.trim();
  return override ? resolve(override) : join(repoRoot(), '.infra');
}

/** Reads and writes the state file; writes are atomic (temp file + rename). */
export class StateStore {
  readonly file: string;

  constructor(readonly dir: string) {
    this.file = join(dir, 'state.json');
  }

  read(): InfraState {
    if (!existsSync(this.file)) return { version: 1, services: {} };
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch (error) {
      throw new Error(`${this.file} is not valid JSON (${(error as Error).message}); remove it after checking with ps`);
    }
    if (!isState(parsed)) throw new Error(`${this.file} has an unknown format; remove it after checking with ps`);
    return parsed;
  }

  /** Applies `change` to the current state and writes the result (synchronously, so calls never interleave). */
  update(change: (services: Partial<Record<ServiceName, ServiceRecord>>) => void): InfraState {
    const services = { ...this.read().services };
    change(services);
    const state: InfraState = { version: 1, services };
    mkdirSync(this.dir, { recursive: true });
    if (Object.keys(services).length === 0) {
      rmSync(this.file, { force: true });
      return state;
    }
    const temp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(state, null, 2)}\n`);
    renameSync(temp, this.file);
    return state;
  }

  /** Deletes the state file. */
  remove(): void {
    rmSync(this.file, { force: true });
  }
}

function isState(value: unknown): value is InfraState {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { version?: unknown; services?: unknown };
  return candidate.version === 1 && typeof candidate.services === 'object' && candidate.services !== null;
}

/**
 * The PIDs of the shared-topology servers the CLI started and that are still the processes it
 * started (each recorded member whose `/proc/<pid>/cwd` is still its data directory), of every
 * service of the state file in `dir` (default: {@link infraDir}), or of `services` only. Empty when
 * the CLI started nothing, or the servers are someone else's (`FENCELOCK_*` addresses): those are
 * left alone.
 */
export function startedServerPids(dir: string = infraDir(), services?: readonly ServiceName[]): number[] {
  const pids: number[] = [];
  for (const record of Object.values(new StateStore(dir).read().services)) {
    if (record === undefined || (services !== undefined && !services.includes(record.service))) continue;
    for (const member of record.members) if (isOurProcess(member.pid, member.cwd)) pids.push(member.pid);
  }
  return pids;
}
