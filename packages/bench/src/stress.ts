/**
 * The stress section of `pnpm bench` (issue "Under load"), after the other scenarios:
 * - a herd of waiters per fencelock subject (src/herd.ts), counted on dedicated servers;
 * - held locks (src/held-locks.ts, as it is) quiet, then while CPU hogs spin (src/cpu-hogs.ts);
 * - contention (src/contention.ts, as it is) of the Redis and Redlock fencelock subjects and their
 *   peers (node-redlock, redis-semaphore), every one quiet, then every one loaded, in rounds
 *   (src/contention-rounds.ts).
 * Each measurement is bounded by its own scenario; the hogs are started per loaded run, bounded by
 * that run's worst case, and stopped when it ends.
 */
import { startDedicatedServers, sharedServers, type BenchServers } from './bench-servers.js';
import { runContention } from './contention.js';
import { medianRounds, rotated, type ContentionRound, type Load, type StressContentionResult } from './contention-rounds.js';
import { underCpuLoad, type CpuHogReport } from './cpu-hogs.js';
import { DEFAULT_ACQUIRE_PHASE_MS, DEFAULT_RELEASE_PHASE_MS, runHeldLocks, type HeldLocksResult } from './held-locks.js';
import { runHerd, type HerdResult } from './herd.js';
import { subjects, type Subject } from './subjects.js';

export type { ContentionRound, Load, StressContentionResult } from './contention-rounds.js';

/** A held-locks result of the stress section. */
export type StressHeldLocksResult = HeldLocksResult & { readonly load: Load };

/** The hogs of one loaded run. */
export interface HogRun {
  /** `<scenario> <subject id>`. */
  readonly run: string;
  readonly hogs: readonly CpuHogReport[];
}

/** Subjects of the contention part: fencelock on Redis and Redlock, the peers they are compared with, the FIFO floor and the fair-lock floor. */
export const STRESS_CONTENTION_SUBJECTS: readonly string[] = [
  'redis/fencelock',
  'redis/fencelock-barging',
  // Not a lock: the bare hand-off between processes that serving waiters first costs (see report.ts).
  'redis/fifo-floor',
  // The least a lock that serves waiters first does (TTL, owner check, token; see subjects-fair-floor.ts).
  'redis/fair-floor',
  // fencelock's contended requests without fencelock's code (see subjects-protocol.ts).
  'redis/handoff-twin',
  'redis/node-redlock',
  'redis/redis-semaphore-mutex',
  'redlock/fencelock',
  'redlock/fencelock-barging',
  'redlock/node-redlock',
  'redlock/redis-semaphore-redlock-mutex',
];

/** Everything the stress section measured (`stress` in bench-results/latest.json). */
export interface StressResults {
  /** The settings it ran with. */
  readonly settings: Readonly<Record<string, number>>;
  /** The command that produced these figures (the `BENCH_*` variables that were set, then `pnpm bench`). */
  readonly command: string;
  readonly herd: readonly HerdResult[];
  readonly heldLocks: readonly StressHeldLocksResult[];
  /** The median round of each implementation under each load (see contention-rounds.ts). */
  readonly contention: readonly StressContentionResult[];
  /** Every contention run, each with its round; absent in results from before rounds. */
  readonly contentionRounds?: readonly ContentionRound[];
  /** CPU time each hog spun, per loaded run. */
  readonly hogRuns: readonly HogRun[];
}

/** Sizes and bounds of the stress section. */
export interface StressOptions {
  /** CPU hog processes in the loaded runs. */
  readonly hogs: number;
  readonly herdWaiters: number;
  /** Each herd call's waitMs (default 200). */
  readonly herdWaitMs?: number;
  /** When the herd's holder releases, ms (default 100). */
  readonly herdReleaseAfterMs?: number;
  readonly heldLocks: number;
  readonly heldTtlMs: number;
  readonly holdWindowMs: number;
  readonly contentionClients: number;
  readonly contentionMs: number;
  /** How long each contention run contends before it is measured, ms (default 0; see contention.ts). */
  readonly contentionWarmupMs?: number;
  /** Runs of each contention subject per load, the order rotated per round (default 1). */
  readonly contentionRounds?: number;
  readonly maxAcquisitionsPerClient: number;
  /** Count on the shared servers instead of dedicated ones. */
  readonly countOnShared: boolean;
  /** The subset to run (`BENCH_ONLY`). */
  pick(list: readonly Subject[]): Subject[];
  /** Each result line. */
  log(line: string): void;
  /** Which measurement starts (for reports of uncaught exceptions). */
  starting(what: string): void;
  /** A measurement (`<scenario> <subject id>`) that failed; the section goes on without it. */
  fail(what: string, cause: unknown): void;
}

/** `BENCH_*` variables that were set, then the command. */
export function benchCommand(env: NodeJS.ProcessEnv = process.env): string {
  const set = Object.entries(env)
    .filter(([name, value]) => name.startsWith('BENCH_') && value !== undefined && value !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${value ?? ''}`);
  return [...set, 'pnpm bench'].join(' ');
}

// Worst cases of the scenarios, bounding the hogs of a loaded run: runHeldLocks' acquire and release
// phases; runContention waits up to 30 s for its workers, then their window, a last wait and 30 s more.
const HELD_LOCKS_PHASES_MS = DEFAULT_ACQUIRE_PHASE_MS + DEFAULT_RELEASE_PHASE_MS;
const CONTENTION_OVERHEAD_MS = 60_000;

/** Runs the stress section; a measurement that fails is reported through `fail` and skipped. */
export async function runStress(options: StressOptions): Promise<StressResults> {
  const herd: HerdResult[] = [];
  const heldLocks: StressHeldLocksResult[] = [];
  const contentionRounds: ContentionRound[] = [];
  const hogRuns: HogRun[] = [];
  const loads: readonly Load[] = ['quiet', 'loaded'];
  /** `work` as is when quiet; under the hogs, recording what they did, when loaded. */
  const measure = async <T>(load: Load, run: string, boundMs: number, work: () => Promise<T>): Promise<T> => {
    if (load === 'quiet') return work();
    const { result, hogs } = await underCpuLoad(options.hogs, boundMs, work);
    hogRuns.push({ run, hogs });
    return result;
  };

  let servers: BenchServers | undefined;
  try {
    servers = options.countOnShared ? sharedServers() : await startDedicatedServers();
    const counted = options.pick(subjects(servers.addresses)).filter((s) => s.openProvider !== undefined);
    for (const subject of counted) {
      options.starting(`herd ${subject.id}`);
      try {
        const result = await runHerd(subject, servers.probe(subject.backend), {
          waiters: options.herdWaiters,
          ...(options.herdWaitMs === undefined ? {} : { waitMs: options.herdWaitMs }),
          ...(options.herdReleaseAfterMs === undefined ? {} : { releaseAfterMs: options.herdReleaseAfterMs }),
        });
        herd.push(result);
        options.log(
          `herd of ${result.waiters} ${subject.id}: ${result.settled} settled, ${result.unsettled} unsettled, ${result.granted} granted, ${result.timedOut} timed out, ` +
            `overrun p50 ${result.overrunP50Ms} p99 ${result.overrunP99Ms} max ${result.overrunMaxMs} ms, release → first grant ${result.releaseToFirstGrantMs ?? '—'} ms, ` +
            `${result.serverRequestsPerGrant ?? '—'} server requests per grant`,
        );
      } catch (cause) {
        options.fail(`herd ${subject.id}`, cause);
      }
    }
    for (const subject of counted) {
      for (const load of loads) {
        const run = `held locks ${load} ${subject.id}`;
        options.starting(run);
        try {
          const bound = HELD_LOCKS_PHASES_MS + options.heldTtlMs + options.holdWindowMs;
          const probe = servers.probe(subject.backend);
          const result = await measure(load, run, bound, () =>
            runHeldLocks(subject, probe, { locks: options.heldLocks, ttlMs: options.heldTtlMs, windowMs: options.holdWindowMs }),
          );
          heldLocks.push({ ...result, load });
          options.log(
            `${run}: ${result.locksHeld} / ${result.locksRequested} held, ${result.locksLost} lost, ${result.locksHeldAtEnd} held at the end, ` +
              `${result.requestsPerLockPerRenewal} requests per lock per renewal, CPU ${result.cpuSecondsPerSecond.toFixed(3)} s/s`,
          );
        } catch (cause) {
          options.fail(run, cause);
        }
      }
    }
  } catch (cause) {
    // Without servers to count on, the contention part (on the shared servers) still runs.
    options.fail('stress dedicated servers', cause);
  } finally {
    await servers?.stop();
  }

  const fighters = options.pick(subjects()).filter((s) => STRESS_CONTENTION_SUBJECTS.includes(s.id));
  const window = { clients: options.contentionClients, maxMs: options.contentionMs, maxAcquisitionsPerClient: options.maxAcquisitionsPerClient, warmupMs: options.contentionWarmupMs };
  const rounds = Math.max(1, Math.round(options.contentionRounds ?? 1));
  // Every subject quiet, then every subject loaded: the figures compared in a target ran side by side;
  // within a load, round after round, each in its own order.
  const runs = loads.flatMap((load) => Array.from({ length: rounds }, (_, round) => rotated(fighters, round).map((subject) => ({ load, round, subject }))).flat());
  for (const { load, round, subject } of runs) {
    const run = `contention ${load} ${subject.id}${rounds > 1 ? ` round ${round + 1}/${rounds}` : ''}`;
    options.starting(run);
    try {
      const result = await measure(load, run, CONTENTION_OVERHEAD_MS + (options.contentionWarmupMs ?? 0) + 2 * options.contentionMs, () => runContention(subject, window));
      contentionRounds.push({ ...result, load, round });
      options.log(
        `${run}: ${result.acquisitionsPerSec} acq/s, hand-off p50 ${result.handoffP50Ms} ms p99 ${result.handoffP99Ms} ms, ` +
          `waiter next ${(result.waiterWinShare * 100).toFixed(0)} %, per client ${result.perClient.join('/')}, failed waits ${result.failures}`,
      );
    } catch (cause) {
      options.fail(run, cause);
    }
  }

  return {
    settings: {
      hogs: options.hogs,
      herdWaiters: options.herdWaiters,
      herdWaitMs: options.herdWaitMs ?? 200,
      herdReleaseAfterMs: options.herdReleaseAfterMs ?? 100,
      heldLocks: options.heldLocks,
      heldTtlMs: options.heldTtlMs,
      holdWindowMs: options.holdWindowMs,
      contendingProcesses: options.contentionClients,
      contentionMs: options.contentionMs,
      contentionWarmupMs: options.contentionWarmupMs ?? 0,
      contentionRounds: rounds,
    },
    command: benchCommand(),
    herd,
    heldLocks,
    contention: medianRounds(contentionRounds),
    contentionRounds,
    hogRuns,
  };
}
