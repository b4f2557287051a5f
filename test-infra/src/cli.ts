/**
 * `infra` — start, inspect and stop the shared test topology (DESIGN.md) as plain processes on
 * loopback, or wrap a command with it. Run through bin/infra.mjs.
 *
 *   infra up                 start what is not already healthy; leave it running
 *   infra down               stop exactly what we started (by PID), delete data dirs and state
 *   infra status             table of service → address → health → owner
 *   infra run -- <command…>  up what is missing, run the command with FENCELOCK_* set, stop what this run started
 */
import { spawn } from 'node:child_process';
import { rmSync, rmdirSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, join } from 'node:path';
import { ensureBinaries } from './binaries.js';
import { addressOf } from './cli/addresses.js';
import { ensureTopology, type EnsureReport } from './cli/ensure.js';
import { SHARED_SERVICES } from './cli/services.js';
import { processesUnder, stopService, sweepStrays } from './cli/stop.js';
import { formatTable, seconds } from './cli/table.js';
import { isOurProcess } from './processes.js';
import { StateStore, infraDir, repoRoot } from './state.js';
import { topology, topologyEnv, type ServiceName, type Topology } from './topology.js';

const USAGE = `usage: infra <command>

  up                  start the shared topology (what is not already healthy) and leave it running
  down                stop what "up"/"run" started (by PID), delete its data, remove the state
  status              show each service's address, health and owner (exit code 1 if any is down)
  run -- <command…>   start what is missing, run <command> with FENCELOCK_* set,
                      then stop only what this invocation started; exits with <command>'s code

Addresses come from FENCELOCK_REDIS_URL, FENCELOCK_REDLOCK_URLS, FENCELOCK_REDIS_CLUSTER_URLS,
FENCELOCK_ZK_HOSTS, FENCELOCK_ETCD_ENDPOINTS and FENCELOCK_POSTGRES_URL (loopback only).
Logs, data and state: <repo>/.infra/ (or FENCELOCK_INFRA_DIR).`;

function log(line: string): void {
  console.log(`[infra] ${line}`);
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'up':
      return up();
    case 'down':
      return down();
    case 'status':
      return status();
    case 'run': {
      const commandLine = rest[0] === '--' ? rest.slice(1) : rest;
      if (commandLine.length === 0) {
        console.error(`infra run: no command given\n\n${USAGE}`);
        return 2;
      }
      return run(commandLine);
    }
    case '-h':
    case '--help':
    case 'help':
      console.log(USAGE);
      return 0;
    default:
      console.error(`infra: unknown command ${JSON.stringify(command ?? '')}\n\n${USAGE}`);
      return 2;
  }
}

function ownerText(store: StateStore, service: ServiceName, report?: EnsureReport): string {
  if (report?.outcome === 'started') return 'fencelock (started now)';
  const record = store.read().services[service];
  if (record && record.members.every((m) => isOurProcess(m.pid, m.cwd))) {
    return `fencelock (${record.startedBy}, pid ${record.members.map((m) => m.pid).join(',')})`;
  }
  if (report?.outcome === 'external') return 'external';
  return '-';
}

function printReports(t: Topology, store: StateStore, reports: readonly EnsureReport[]): void {
  const rows = [['service', 'address', 'state', 'health', 'owner', 'time']];
  for (const report of reports) {
    rows.push([
      report.service,
      addressOf(t, report.service),
      report.outcome === 'failed' ? 'FAILED' : 'up',
      report.health?.detail ?? '-',
      report.outcome === 'failed' ? '-' : ownerText(store, report.service, report),
      `${(report.elapsedMs / 1_000).toFixed(2)} s`,
    ]);
  }
  console.log(formatTable(rows));
  for (const report of reports) {
    if (report.error) console.error(`\n[infra] ${report.service} failed: ${report.error.message}`);
  }
}

function summary(reports: readonly EnsureReport[]): string {
  const names = (outcome: EnsureReport['outcome']): string =>
    reports.filter((r) => r.outcome === outcome).map((r) => r.service).join(', ') || '-';
  return `started: ${names('started')}; already running: ${names('running')}; external: ${names('external')}; failed: ${names('failed')}`;
}

async function up(): Promise<number> {
  const start = performance.now();
  await ensureBinaries(log);
  const t = topology();
  const store = new StateStore(infraDir());
  const reports = await ensureTopology({ topology: t, store, startedBy: 'up', log });
  printReports(t, store, reports);
  const failed = reports.some((r) => r.outcome === 'failed');
  log(`up ${failed ? 'FAILED' : 'done'} in ${seconds(start)} (${summary(reports)})`);
  if (failed) {
    log('what did start is left running; "infra down" stops it');
    hintStrays(store);
  }
  return failed ? 1 : 0;
}

async function down(): Promise<number> {
  const start = performance.now();
  const dir = infraDir();
  const store = new StateStore(dir);
  const records = Object.values(store.read().services);
  const stopped = await Promise.all(
    records.map(async (record) => `${record.service} (${await stopService(record)}/${record.members.length})`),
  );
  // Anything left running in .infra/ without a record (state file lost, CLI killed mid-start).
  const strays = await sweepStrays(dir);
  rmSync(join(dir, 'data'), { recursive: true, force: true });
  store.remove();
  const what = stopped.length > 0 ? `stopped ${stopped.join(', ')}` : 'nothing recorded to stop';
  log(`down in ${seconds(start)}: ${what}${strays > 0 ? `; killed ${strays} unrecorded process(es) under ${dir}` : ''}`);
  return 0;
}

async function status(): Promise<number> {
  const t = topology();
  const store = new StateStore(infraDir());
  const healths = await Promise.all(SHARED_SERVICES.map((service) => service.health(t)));
  const rows = [['service', 'address', 'state', 'health', 'owner']];
  SHARED_SERVICES.forEach((service, i) => {
    const health = healths[i];
    const owner = ownerText(store, service.name);
    rows.push([
      service.name,
      addressOf(t, service.name),
      health?.ok ? 'up' : 'down',
      health?.detail ?? '-',
      owner === '-' && health?.ok ? 'external' : owner,
    ]);
  });
  console.log(formatTable(rows));
  hintStrays(store);
  return healths.every((h) => h.ok) ? 0 : 1;
}

async function run(commandLine: readonly string[]): Promise<number> {
  const store = new StateStore(infraDir());
  let child: ReturnType<typeof spawn> | undefined;
  let interrupted: NodeJS.Signals | undefined;
  // Installed first, so a Ctrl-C while servers start still reaches the cleanup below.
  const forward = (sig: NodeJS.Signals): void => {
    interrupted ??= sig;
    if (child && child.exitCode === null) child.kill(sig);
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const sig of signals) process.on(sig, forward);
  let started: ServiceName[] = [];
  try {
    const upStart = performance.now();
    await ensureBinaries(log);
    const t = topology();
    const reports = await ensureTopology({ topology: t, store, startedBy: 'run', log });
    started = reports.filter((r) => r.outcome === 'started').map((r) => r.service);
    if (reports.some((r) => r.outcome === 'failed')) {
      printReports(t, store, reports);
      log(`up FAILED in ${seconds(upStart)} (${summary(reports)}); not running the command`);
      return 1;
    }
    log(`up in ${seconds(upStart)} (${summary(reports)})`);
    if (interrupted) {
      log(`interrupted by ${interrupted} before the command started`);
      return 128 + (constants.signals[interrupted] ?? 0);
    }

    const commandStart = performance.now();
    log(`run: ${commandLine.join(' ')}`);
    const env = {
      ...process.env,
      ...topologyEnv(t),
      // So `infra run -- turbo …` works outside `pnpm run` too.
      PATH: [join(repoRoot(), 'node_modules', '.bin'), process.env.PATH ?? ''].join(delimiter),
    };
    const [file, ...args] = commandLine;
    const code = await new Promise<number>((resolve) => {
      child = spawn(file ?? '', args, { stdio: 'inherit', env });
      child.once('error', (error) => {
        console.error(`[infra] could not run ${file ?? ''}: ${error.message}`);
        resolve(127);
      });
      child.once('exit', (exitCode, signal) => {
        resolve(exitCode ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
      });
    });
    log(`command exited with code ${code} in ${seconds(commandStart)}`);
    return code;
  } finally {
    const downStart = performance.now();
    const records = store.read().services;
    const ours = started.flatMap((name) => {
      const record = records[name];
      return record && record.ownerPid === process.pid ? [record] : [];
    });
    await Promise.all(ours.map((record) => stopService(record)));
    store.update((services) => {
      for (const record of ours) delete services[record.service];
    });
    removeIfEmpty(join(store.dir, 'data'));
    log(`down in ${seconds(downStart)}: ${ours.length > 0 ? `stopped ${ours.map((r) => r.service).join(', ')}` : 'nothing started by this run'}`);
    for (const sig of signals) process.off(sig, forward);
  }
}

/** Processes running inside .infra/ that no record names can only come from an earlier CLI run. */
function hintStrays(store: StateStore): void {
  const recorded = new Set(Object.values(store.read().services).flatMap((r) => r.members.map((m) => m.pid)));
  const strays = processesUnder(store.dir).filter((p) => !recorded.has(p.pid));
  if (strays.length > 0) {
    log(`${strays.length} process(es) started by an earlier infra run have no record (pids ${strays.map((p) => p.pid).join(',')}); "infra down" stops them`);
  }
}

/** Removes an empty directory; leaves it when something (another service's data) is inside. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty, or already gone
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`[infra] ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
