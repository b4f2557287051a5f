/**
 * Bringing the shared topology to "every service healthy", used by `up` and `run`: leave our
 * healthy services alone, use a user's own servers when their env var points at them, start
 * the rest, and refuse to touch ports held by anything we did not start.
 */
import { mkdirSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { InfraError } from '../errors.js';
import { isPortFree } from '../ports.js';
import { isOurProcess } from '../processes.js';
import type { MemberRecord, ServiceRecord, StateStore } from '../state.js';
import { TOPOLOGY_ENV, type ServiceName, type Topology } from '../topology.js';
import { SHARED_SERVICES, type ServiceHealth, type SharedService } from './services.js';
import { stopService } from './stop.js';

/** What happened to one service. */
export type EnsureOutcome = 'started' | 'running' | 'external' | 'failed';

/** One row of the result. */
export interface EnsureReport {
  readonly service: ServiceName;
  readonly outcome: EnsureOutcome;
  readonly health?: ServiceHealth;
  readonly error?: Error;
  /** How long ensuring this service took. */
  readonly elapsedMs: number;
}

/** Options of {@link ensureTopology}. */
export interface EnsureOptions {
  readonly topology: Topology;
  readonly store: StateStore;
  readonly startedBy: 'up' | 'run';
  readonly log: (line: string) => void;
}

/** Hosts on which we can start a server ourselves (they all bind 127.0.0.1). */
const STARTABLE_HOSTS = new Set(['127.0.0.1', 'localhost']);

/** Ensures every service in parallel; never throws for one service's failure (see `outcome`). */
export async function ensureTopology(options: EnsureOptions): Promise<EnsureReport[]> {
  return Promise.all(
    SHARED_SERVICES.map(async (service): Promise<EnsureReport> => {
      const start = performance.now();
      try {
        return { ...(await ensureService(service, options)), elapsedMs: performance.now() - start };
      } catch (error) {
        return { service: service.name, outcome: 'failed', error: error as Error, elapsedMs: performance.now() - start };
      }
    }),
  );
}

async function ensureService(service: SharedService, options: EnsureOptions): Promise<Omit<EnsureReport, 'elapsedMs'>> {
  const { topology: t, store } = options;
  const record = store.read().services[service.name];
  if (record) {
    const alive = record.members.every((m) => isOurProcess(m.pid, m.cwd));
    if (alive) {
      const health = await service.health(t);
      if (health.ok) return { service: service.name, outcome: 'running', health };
      options.log(`${service.name}: started by us but unhealthy (${health.detail}); restarting it`);
    } else {
      options.log(`${service.name}: some recorded processes are gone; restarting it`);
    }
    await stopService(record);
    store.update((services) => {
      delete services[service.name];
    });
  }

  const busy: number[] = [];
  for (const port of service.ports(t)) {
    if (!(await isPortFree(port))) busy.push(port);
  }
  const envVar = TOPOLOGY_ENV[service.name];
  if (busy.length > 0) {
    if (!t.fromEnv[service.name]) {
      throw new InfraError(
        `port ${busy.join(', ')} (${service.name}) is already in use by a process fencelock did not start. ` +
          `Stop it, or set ${envVar} to use that server (or to move ${service.name} to other ports).`,
      );
    }
    const health = await service.health(t);
    if (!health.ok) {
      throw new InfraError(
        `${envVar} points at port ${busy.join(', ')}, which is in use but not healthy (${health.detail}); ` +
          'fencelock will not start or stop anything there.',
      );
    }
    return { service: service.name, outcome: 'external', health };
  }

  const hosts = t.servers[service.name].map((s) => s.host);
  const foreign = hosts.find((h) => !STARTABLE_HOSTS.has(h));
  if (foreign !== undefined) {
    throw new InfraError(`${envVar} names host ${foreign}, where nothing answers; test-infra starts servers only on 127.0.0.1`);
  }
  await startService(service, options);
  return { service: service.name, outcome: 'started', health: await service.health(t) };
}

async function startService(service: SharedService, options: EnsureOptions): Promise<void> {
  const { store } = options;
  const wanted = join(store.dir, 'data', service.name);
  const logDir = join(store.dir, 'logs');
  // Fresh data every time: etcd remembers peer URLs, a cluster node its cluster id.
  rmSync(wanted, { recursive: true, force: true });
  mkdirSync(wanted, { recursive: true, mode: 0o700 });
  mkdirSync(logDir, { recursive: true });
  // The kernel reports a process's cwd with symlinks resolved; record it that way so the
  // "is this PID still ours" check in stop.ts compares like with like.
  const dataRoot = realpathSync(wanted);
  let recorded: ServiceRecord | undefined;
  const record = (members: readonly MemberRecord[]): void => {
    recorded = {
      service: service.name,
      startedBy: options.startedBy,
      ownerPid: process.pid,
      startedAt: new Date().toISOString(),
      dataRoot,
      members: [...(recorded?.members ?? []), ...members],
    };
    const value = recorded;
    store.update((services) => {
      services[service.name] = value;
    });
  };
  try {
    await service.start({ topology: options.topology, dataRoot, logDir, record });
  } catch (error) {
    // Leave nothing half-started behind.
    if (recorded) await stopService(recorded);
    store.update((services) => {
      delete services[service.name];
    });
    throw error;
  }
}
