/**
 * One chaos run: one backend, one fault scenario, N client processes, a seeded nemesis, a fenced
 * store, one JSONL history written by the parent, and the checker's verdict.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CheckResult,
  type HistoryEventInput,
  type JsonValue,
  NEMESIS_PROC,
  type SummaryRow,
  checkHistory,
  createHistoryWriter,
  monotonicNs,
  readHistoryFile,
  startFencedStore,
  summaryRow,
} from '@fencelock/history-checker';
import type { TcpProxy } from '@fencelock/test-infra';
import { BACKEND_TRAITS, type BackendName, scanLeftovers } from './backends.js';
import { ClientProcess } from './client-process.js';
import type { CurrentHold, NemesisContext, NoAcquireWindow, Scenario } from './nemesis.js';
import type { ClientStartConfig, WorkloadParams } from './protocol.js';
import { createRng } from './rng.js';
import { type BackendServers, startBackendServers, startClientProxies } from './servers.js';

/** The workload FAULTS.md describes: holds of 0–1.5 × TTL, fenced writes, a quarter token probes. */
export const DEFAULT_WORKLOAD: WorkloadParams = {
  holdMin: 0,
  holdMax: 1.5,
  probeShare: 0.25,
  abandonShare: 0.05,
  writeGapMinMs: 50,
  writeGapMaxMs: 250,
  idleMaxMs: 100,
  lateWrite: true,
  waitMs: 8_000,
  semaphoreLimit: 0,
  election: false,
};

/** Options of {@link runScenario}. */
export interface RunOptions {
  readonly backend: BackendName;
  readonly scenario: Scenario;
  readonly seed: number;
  /** How long the workload runs, ms. */
  readonly durationMs: number;
  /** Client processes, 3–5. @default 3 */
  readonly clients?: number;
  /** Servers to reuse (healed before the run); when absent the run starts and stops its own. */
  readonly servers?: BackendServers;
  /** Where the history and the store log go. */
  readonly dir: string;
  /** When the first injection starts, ms after the clients are ready. @default 1_500 */
  readonly firstInjectionMs?: number;
  /** Gap between injections, ms (uniform). @default [2_000, 5_000] */
  readonly gapMs?: readonly [number, number];
  /** At most this many injections. @default unbounded (time-bounded) */
  readonly maxInjections?: number;
  /**
   * `client` (default): a client event's `t` is the client's own monotonic reading (`tc`), exact on
   * one host (CLOCK_MONOTONIC is system-wide); `receipt`: the parent stamps it when the IPC message
   * arrives, as under libfaketime (then IPC delay widens every comparison).
   */
  readonly timeAxis?: 'client' | 'receipt';
  /** L1 bound ε, ms. @default 50 (FAULTS.md) */
  readonly lossSignalBoundMs?: number;
}

/** What a run found. */
export interface RunOutcome {
  readonly backend: BackendName;
  readonly scenario: Scenario;
  readonly seed: number;
  readonly run: string;
  readonly historyPath: string;
  readonly result: CheckResult;
  /** Acquisitions granted inside a no-acquire window (quorum loss): each is a violation (L2). */
  readonly minorityGrants: readonly { readonly seq: number; readonly key: string; readonly proc: string; readonly why: string }[];
  /** Harness trouble: a client that crashed by itself, reported an error, or did not stop. */
  readonly harnessErrors: readonly string[];
  readonly injections: number;
  /** Nemesis steps that actually did something (not `no-holder`, not the run markers). */
  readonly faultSteps: number;
  /** The largest event-loop delay any client saw, ms (includes the SIGSTOP pauses the nemesis caused). */
  readonly loopDelayMaxMs: number | null;
  readonly row: SummaryRow;
  readonly elapsedMs: number;
  /** True when the outcome is the expected one: no violation, (negative control) at least one, or either (a race). */
  readonly passed: boolean;
}

const STOP_GRACE_MS = 10_000;

/** Runs one scenario and checks its history. Never leaves a process of its own running. */
export async function runScenario(options: RunOptions): Promise<RunOutcome> {
  const started = performance.now();
  const { backend, scenario } = options;
  const traits = BACKEND_TRAITS[backend];
  const ttlMs = scenario.ttlMs ?? traits.ttlMs;
  const rng = createRng(options.seed);
  const nemesisRng = rng.fork('nemesis');
  const run = `${backend}-${scenario.id}-${options.seed}`;
  mkdirSync(options.dir, { recursive: true });
  const historyPath = join(options.dir, `${run}.jsonl`);
  const storeLogPath = join(options.dir, `${run}.writes.jsonl`);
  const ownServers = options.servers === undefined;
  const servers = options.servers ?? (await startBackendServers(backend, { persistence: scenario.persistence ?? false, sessionTimeoutMs: ttlMs }));
  const harnessErrors: string[] = [];
  const clients = new Map<string, ClientProcess>();
  const proxies = new Map<string, TcpProxy[]>();
  const windows: NoAcquireWindow[] = [];
  const holds = new Map<string, CurrentHold>();
  const holdWaiters = new Set<() => void>();
  const stopNemesis = new AbortController();
  const keyPrefix = `chaos-${run}-${Math.floor(rng.next() * 1e9).toString(36)}/`;
  const keys = Array.from({ length: scenario.keys ?? 2 }, (_, i) => `k${i}`);
  const probeKey = 'probe';
  const workload: WorkloadParams = { ...DEFAULT_WORKLOAD, ...scenario.workload };
  let store: Awaited<ReturnType<typeof startFencedStore>> | undefined;
  let writer: ReturnType<typeof createHistoryWriter> | undefined;
  let injections = 0;
  let leftoverKeys: string[] = [];
  let respawns = 0;
  // Clients stop when told; their own deadline is only a backstop.
  const clientDurationMs = options.durationMs + 60_000;

  const record = (event: HistoryEventInput): void => {
    writer?.record(event);
  };
  const log = (f: string, target?: string, value?: JsonValue): void =>
    record({
      tc: null,
      t: monotonicNs(),
      proc: NEMESIS_PROC,
      key: null,
      f,
      type: 'info',
      token: null,
      lockId: null,
      validUntil: null,
      ttlGranted: null,
      err: null,
      nemesis: { ...(target === undefined ? {} : { target }), ...(value === undefined ? {} : { value }) },
    });

  const onEvent = (event: HistoryEventInput): void => {
    const received = monotonicNs();
    const t = options.timeAxis === 'receipt' || event.tc === null || event.tc === undefined ? received : event.tc;
    record({ ...event, t });
    if (event.nemesis !== undefined || event.lockId === null) return;
    if (event.f === 'acquire' && event.type === 'ok') {
      holds.set(event.lockId, { proc: event.proc, key: event.key, lockId: event.lockId, since: t, validUntil: event.validUntil ?? null });
      for (const wake of holdWaiters) wake();
    } else if (event.f === 'extend' && event.type === 'ok') {
      const hold = holds.get(event.lockId);
      if (hold === undefined) return;
      holds.set(event.lockId, { ...hold, validUntil: event.validUntil ?? null });
      for (const wake of holdWaiters) wake();
    } else if ((event.f === 'release' && event.type === 'invoke') || event.f === 'lost') {
      holds.delete(event.lockId);
    }
  };
  const forgetProc = (proc: string): void => {
    for (const [lockId, hold] of holds) if (hold.proc === proc) holds.delete(lockId);
  };

  const startClient = async (proc: string): Promise<ClientProcess> => {
    if (scenario.proxies === true) proxies.set(proc, await startClientProxies(servers));
    const ports = proxies.get(proc)?.map((proxy) => proxy.port) ?? servers.nodes.map((node) => node.port);
    const config: ClientStartConfig = {
      proc,
      seed: rng.fork(proc).seed,
      backend: { backend, ports, ttlMs, keyPrefix, clientName: proc },
      storeUrl: store?.url ?? '',
      keys,
      probeKey,
      durationMs: clientDurationMs,
      workload,
    };
    const client = new ClientProcess(config, onEvent, (from, message) => harnessErrors.push(`${from}: ${message}`));
    clients.set(proc, client);
    await client.ready();
    return client;
  };

  const context: NemesisContext = {
    rng: nemesisRng,
    ttlMs,
    servers,
    signal: stopNemesis.signal,
    log,
    now: monotonicNs,
    sleep: (ms) =>
      new Promise((resolve) => {
        if (stopNemesis.signal.aborted) return resolve(false);
        const done = (finished: boolean) => () => {
          clearTimeout(timer);
          stopNemesis.signal.removeEventListener('abort', aborted);
          resolve(finished);
        };
        const aborted = done(false);
        const timer = setTimeout(done(true), Math.max(0, ms));
        stopNemesis.signal.addEventListener('abort', aborted, { once: true });
      }),
    holds: () => [...holds.values()],
    waitForHold: ({ after, minValidityMs, timeoutMs }) =>
      new Promise((resolve) => {
        const outlives = (hold: CurrentHold): boolean =>
          minValidityMs === undefined || hold.validUntil === null || hold.validUntil >= monotonicNs() + minValidityMs * 1e6;
        const find = (): CurrentHold | undefined =>
          [...holds.values()].find((hold) => (after === undefined || hold.since >= after) && clients.get(hold.proc)?.paused === false && outlives(hold));
        const first = find();
        if (first !== undefined || stopNemesis.signal.aborted) return resolve(first);
        const finish = (value: CurrentHold | undefined): void => {
          clearTimeout(timer);
          holdWaiters.delete(check);
          stopNemesis.signal.removeEventListener('abort', abort);
          resolve(value);
        };
        const check = (): void => {
          const found = find();
          if (found !== undefined) finish(found);
        };
        const abort = (): void => finish(undefined);
        const timer = setTimeout(abort, timeoutMs);
        holdWaiters.add(check);
        stopNemesis.signal.addEventListener('abort', abort, { once: true });
      }),
    procs: () => [...clients.values()].filter((client) => client.alive).map((client) => client.proc),
    pauseClient: (proc) => clients.get(proc)?.pause(),
    resumeClient: (proc) => clients.get(proc)?.resume(),
    async killClient(proc, respawn) {
      const client = clients.get(proc);
      if (client === undefined || !client.alive) return;
      log('kill', proc);
      await client.kill();
      forgetProc(proc);
      if (respawn && !stopNemesis.signal.aborted) {
        respawns += 1;
        await startClient(`${proc.replace(/r\d+$/, '')}r${respawns}`).catch((error: unknown) => harnessErrors.push(`respawn: ${String(error)}`));
      }
    },
    proxiesOf: (proc) => proxies.get(proc),
    noAcquireWindow: (window) => windows.push(window),
  };

  let result: CheckResult;
  try {
    await servers.heal();
    if ((scenario.persistence ?? false) !== servers.persistence) await servers.setPersistence(scenario.persistence ?? false);
    store = await startFencedStore({ logPath: storeLogPath });
    // A replay with the same seed overwrites the previous history of that run.
    rmSync(historyPath, { force: true });
    rmSync(storeLogPath, { force: true });
    writer = createHistoryWriter({ path: historyPath, run });
    log('run-start', undefined, { backend, fault: scenario.id, seed: options.seed, ttlMs, durationMs: options.durationMs });
    const count = Math.min(5, Math.max(3, options.clients ?? 3));
    await Promise.all(Array.from({ length: count }, (_, i) => startClient(`c${i + 1}`)));
    const workloadEnd = performance.now() + options.durationMs;
    const nemesis = (async () => {
      if (!(await context.sleep(options.firstInjectionMs ?? 1_500))) return;
      const [gapMin, gapMax] = options.gapMs ?? [2_000, 5_000];
      const maxInjections = options.maxInjections ?? 1_000;
      while (injections < maxInjections && !stopNemesis.signal.aborted && performance.now() < workloadEnd - ttlMs) {
        injections += 1;
        await scenario.inject(context);
        if (!(await context.sleep(nemesisRng.between(gapMin, gapMax)))) return;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, workloadEnd - performance.now())));
    stopNemesis.abort();
    await nemesis;
  } catch (error) {
    await store?.close();
    throw error;
  } finally {
    stopNemesis.abort();
    for (const client of clients.values()) client.resume();
    for (const list of proxies.values()) for (const proxy of list) proxy.setMode('pass');
    await servers.heal().catch((error: unknown) => harnessErrors.push(`heal: ${String(error)}`));
    await Promise.all(
      [...clients.values()].map(async (client) => {
        if (!client.alive) return;
        const stopped = await client.stop(STOP_GRACE_MS);
        if (!stopped) {
          log('kill', client.proc, 'did not stop in time');
          harnessErrors.push(`${client.proc} did not stop within ${STOP_GRACE_MS} ms:\n${client.output}`);
        } else if (client.operations === undefined) {
          harnessErrors.push(`${client.proc} exited without finishing:\n${client.output}`);
        }
      }),
    );
    if (store !== undefined) {
      // L3: TTL + 1 s after the clients stopped, nobody may hold a key of the run (a killed holder's
      // lease, a session given up during an outage, must have run out). Asked through a fresh
      // provider of the same adapter; a first look right away usually finds nothing and saves the wait.
      const scan = (): Promise<string[]> =>
        scanLeftovers({ backend, ports: servers.nodes.map((node) => node.port), ttlMs, keyPrefix }, {
          locks: workload.semaphoreLimit > 0 || workload.election ? [probeKey] : [...keys, probeKey],
          semaphores: workload.semaphoreLimit > 0 ? keys : [],
          elections: workload.election ? keys : [],
        }).catch((error: unknown) => {
          harnessErrors.push(`leftover scan: ${String(error)}`);
          return [];
        });
      const stoppedAt = monotonicNs();
      leftoverKeys = await scan();
      if (leftoverKeys.length > 0) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, (stoppedAt - monotonicNs()) / 1e6 + ttlMs + 1_500)));
        leftoverKeys = await scan();
      }
    }
    log('run-end');
    await Promise.all([...proxies.values()].flat().map((proxy) => proxy.close()));
    writer?.close();
    if (ownServers) await servers.stop();
  }
  const fencedStore = store as NonNullable<typeof store>;
  const finalReads: Record<string, string[]> = {};
  for (const key of [...keys, probeKey]) finalReads[key] = [...fencedStore.values(key)];
  const fencedWrites = [...fencedStore.log];
  await fencedStore.close();
  const events = readHistoryFile(historyPath);
  result = checkHistory(events, {
    fencedWrites,
    finalReads,
    leftoverKeys,
    lossSignalBoundMs: options.lossSignalBoundMs ?? 50,
    ...(scenario.id === 'F1' ? { failoverBoundMs: ttlMs + 1_000 + 1_000 } : {}),
  });
  const delays = [...clients.values()].flatMap((client) => (client.loopDelayMaxMs === undefined ? [] : [client.loopDelayMaxMs]));
  const loopDelayMaxMs = delays.length === 0 ? null : Math.max(...delays);
  const faultSteps = events.filter((event) => event.nemesis !== undefined && !['run-start', 'run-end', 'no-holder'].includes(event.f)).length;
  const grants = events.filter((event) => event.nemesis === undefined && event.f === 'acquire' && event.type === 'ok');
  const minorityGrants = windows.flatMap((window) =>
    grants.filter((event) => event.t >= window.from && event.t <= window.to).map((event) => ({ seq: event.seq, key: event.key ?? '', proc: event.proc, why: window.why })),
  );
  const base = summaryRow(backend, `${scenario.id} ${scenario.name}`, result, scenario.expectViolation === true);
  const row: SummaryRow = { ...base, violations: base.violations + minorityGrants.length };
  const violated = row.violations > 0;
  const passed = harnessErrors.length === 0 && (scenario.expectViolation === true ? violated : scenario.race === true || !violated);
  return { backend, scenario, seed: options.seed, run, historyPath, result, minorityGrants, harnessErrors, injections, faultSteps, loopDelayMaxMs, row, elapsedMs: performance.now() - started, passed };
}
