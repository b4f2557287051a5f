/** A soak: every fault scenario of one backend in turn, on one set of servers, each run checked. */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderViolations } from '@fencelock/history-checker';
import type { BackendName } from './backends.js';
import { createRng } from './rng.js';
import { type RunOptions, type RunOutcome, runScenario } from './run.js';
import { SCENARIOS, durationFor, scenario as findScenario } from './scenarios.js';
import { startBackendServers } from './servers.js';

/** Options of {@link soakBackend}. */
export interface SoakOptions {
  readonly backend: BackendName;
  /** The seed; each scenario's run seed derives from it, the backend and the fault id only. */
  readonly seed: number;
  /** Workload seconds for the whole backend, split evenly over its faults (at least `minSecondsPerFault` each). */
  readonly seconds: number;
  readonly minSecondsPerFault?: number;
  /** Only these fault ids. @default every scenario of the backend */
  readonly faults?: readonly string[];
  readonly clients?: number;
  /** See {@link RunOptions.timeAxis}. */
  readonly timeAxis?: 'client' | 'receipt';
  /** @default a fresh temp dir per seed */
  readonly dir?: string;
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

/** The seed of one scenario's run under a soak seed (stable, so one fault can be replayed alone). */
export function runSeed(seed: number, backend: BackendName, faultId: string): number {
  return createRng(seed).fork(`${backend}/${faultId}`).seed;
}

/** Runs the soak; servers are started once and stopped at the end. */
export async function soakBackend(options: SoakOptions): Promise<RunOutcome[]> {
  const log = options.log ?? (() => undefined);
  const scenarios = options.faults === undefined ? SCENARIOS[options.backend] : options.faults.map((id) => findScenario(options.backend, id));
  const perFaultMs = Math.max((options.minSecondsPerFault ?? 10) * 1_000, Math.floor((options.seconds * 1_000) / Math.max(1, scenarios.length)));
  const dir = options.dir ?? join(tmpdir(), `fencelock-chaos-${options.seed}`);
  log(`${options.backend}: starting servers; ${scenarios.length} faults × ${perFaultMs / 1_000} s; histories in ${dir}`);
  const servers = await startBackendServers(options.backend, { sessionTimeoutMs: 20_000 });
  const outcomes: RunOutcome[] = [];
  try {
    for (const scenario of scenarios) {
      const seed = runSeed(options.seed, options.backend, scenario.id);
      const outcome = await runScenario({
        backend: options.backend,
        scenario,
        seed,
        durationMs: durationFor(scenario, perFaultMs),
        servers,
        dir,
        ...(options.clients === undefined ? {} : { clients: options.clients }),
        ...(options.timeAxis === undefined ? {} : { timeAxis: options.timeAxis }),
      });
      outcomes.push(outcome);
      const verdict = outcome.passed ? 'ok' : 'FAILED';
      log(
        `${options.backend} ${scenario.id} ${scenario.name}: ${verdict} (${outcome.row.violations} violation(s)${scenario.expectViolation === true ? ', expected' : ''}, ` +
          `${outcome.injections} injection(s), ${(outcome.elapsedMs / 1_000).toFixed(1)} s, run seed ${seed})`,
      );
      const stats = outcome.result.stats;
      const lost = Object.entries(stats.lostByReason).map(([reason, count]) => `${reason} ${count}`).join(', ') || 'none';
      log(
        `  lost: ${lost}; acquire p50/p99 ${stats.acquireLatencyMs === null ? '—' : `${stats.acquireLatencyMs.p50.toFixed(0)}/${stats.acquireLatencyMs.p99.toFixed(0)} ms`}; ` +
          `longest hand-over gap ${stats.maxHandoverGapMs === null ? '—' : `${stats.maxHandoverGapMs.toFixed(0)} ms`}; ` +
          `fenced writes ${stats.fencedWrites}; client loop delay max ${outcome.loopDelayMaxMs === null ? '—' : `${outcome.loopDelayMaxMs.toFixed(0)} ms`}`,
      );
      if (outcome.passed && outcome.result.violations.length > 0) log(renderViolations(outcome.result, { limit: 3 }));
      if (!outcome.passed) {
        if (outcome.result.violations.length > 0) log(renderViolations(outcome.result, { limit: 10 }));
        for (const grant of outcome.minorityGrants) log(`L2 ${grant.key} acquire ok #${grant.seq} by ${grant.proc} while ${grant.why}`);
        for (const error of outcome.harnessErrors) log(`harness: ${error}`);
        log(`history: ${outcome.historyPath}`);
        log(`replay: pnpm chaos --backend ${options.backend} --faults ${scenario.id} --seed ${options.seed} --seconds ${perFaultMs / 1_000}`);
      }
    }
  } finally {
    await servers.stop();
  }
  return outcomes;
}
