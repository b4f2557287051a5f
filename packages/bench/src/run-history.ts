/**
 * The performance targets of the last full `pnpm bench` runs, kept in `docs/bench/history.json` beside
 * the report, so that docs/BENCHMARKS.md can show a target against the runs before this one: one lucky
 * run is not a target met. Only a full run (every subject and section, default settings) is recorded;
 * a subset run still shows the recorded runs, and records nothing.
 */
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import type { PerformanceTarget, ThroughputSplit } from './performance-targets.js';
import type { MachineInfo } from './report.js';

/** Full runs kept in the history: enough to see a trend, few enough to read. */
export const HISTORY_RUNS = 10;

/** One recorded full run. */
export interface RecordedRun {
  /** When the run started (ISO 8601): its identity in the history. */
  readonly startedAt: string;
  /** The commit the run measured, `+ changes` when tracked code outside docs/ differed from it. */
  readonly commit: string;
  /** The machine it ran on (see {@link machineLabel}): runs of other machines, or placed otherwise, are not set beside this one's. */
  readonly machine: string;
  readonly targets: readonly Pick<PerformanceTarget, 'id' | 'measured' | 'met' | 'split'>[];
}

/** The recorded runs, oldest first; none when the file is absent. A file that is not JSON throws: it is committed, so it is fixed, not lost. */
export async function readHistory(path: URL): Promise<RecordedRun[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path.pathname} is not the bench's run history: ${(error as Error).message}`);
  }
  return Array.isArray(parsed) ? parsed.map(parseRun).filter((run) => run !== undefined) : [];
}

/** `history` with `run` recorded: a run of the same start replaced, the oldest dropped beyond {@link HISTORY_RUNS}. */
export function withRun(history: readonly RecordedRun[], run: RecordedRun): RecordedRun[] {
  const others = history.filter((earlier) => earlier.startedAt !== run.startedAt);
  return [...others, run].sort((a, b) => a.startedAt.localeCompare(b.startedAt)).slice(-HISTORY_RUNS);
}

/** Writes `history` as the bench reads it back. */
export async function writeHistory(path: URL, history: readonly RecordedRun[]): Promise<void> {
  // NaN (a side not measured) has no JSON form: null, read back as NaN.
  const runs = history.map((run) => ({
    ...run,
    targets: run.targets.map((t) => ({ id: t.id, measured: Number.isFinite(t.measured) ? t.measured : null, met: t.met, ...(t.split === undefined ? {} : { split: t.split }) })),
  }));
  await writeFile(path, `${JSON.stringify(runs, null, 2)}\n`);
}

/** What a run records of its targets. */
export function recordedRun(startedAt: string, commit: string, machine: Pick<MachineInfo, 'cpu' | 'cores' | 'placement'>, targets: readonly PerformanceTarget[]): RecordedRun {
  return { startedAt, commit, machine: machineLabel(machine), targets: targets.map(({ id, measured, met, split }) => ({ id, measured, met, ...(split === undefined ? {} : { split }) })) };
}

/**
 * A machine as the history names it: its CPU model and core count, and where the client and the
 * servers ran when they had CPUs of their own (runs placed otherwise are not set beside each other).
 */
export function machineLabel(machine: Pick<MachineInfo, 'cpu' | 'cores' | 'placement'>): string {
  return `${machine.cpu}, ${machine.cores} cores${machine.placement === undefined ? '' : `; ${machine.placement}`}`;
}

/**
 * The commit checked out in `repository`, with `+ changes` when tracked files outside `docs/` (which
 * the bench itself rewrites) differ from it; `unknown` without git.
 */
export function sourceCommit(repository: URL): string {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: repository, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  try {
    const commit = git('rev-parse', '--short=7', 'HEAD');
    const changed = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)docs');
    return changed === '' ? commit : `${commit} + changes`;
  } catch {
    return 'unknown';
  }
}

// A recorded run as written by `writeHistory`, or undefined for anything else.
function parseRun(value: unknown): RecordedRun | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const run = value as Record<string, unknown>;
  const { startedAt, commit, machine, targets } = run;
  if (typeof startedAt !== 'string' || typeof commit !== 'string' || typeof machine !== 'string' || !Array.isArray(targets)) return undefined;
  const parsed: RecordedRun['targets'][number][] = [];
  for (const target of targets as unknown[]) {
    if (typeof target !== 'object' || target === null) return undefined;
    const { id, measured, met, split } = target as Record<string, unknown>;
    // Written as null when not measured.
    if (typeof id !== 'string' || typeof met !== 'boolean' || (measured !== null && typeof measured !== 'number')) return undefined;
    const parsedSplit = parseSplit(split);
    parsed.push({ id, measured: measured ?? Number.NaN, met, ...(parsedSplit === undefined ? {} : { split: parsedSplit }) });
  }
  return { startedAt, commit, machine, targets: parsed };
}

// A throughput target's recorded split (runs before it was recorded have none).
function parseSplit(value: unknown): ThroughputSplit | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { least, protocol, library } = value as Record<string, unknown>;
  return typeof least === 'number' && typeof protocol === 'number' && typeof library === 'number' ? { least, protocol, library } : undefined;
}

/**
 * A full run: `pnpm bench` as it is (fencelock from its built packages) with no `BENCH_*` setting in
 * `env`. A subset, a shorter run, a skipped section or a run from the sources is not one.
 */
export function isFullRun(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['FENCELOCK_BENCH_BUILT'] === '1' && Object.keys(env).every((name) => !name.startsWith('BENCH_'));
}
