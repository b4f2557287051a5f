/**
 * Sections 1 (uncontended) and 3a (64 keys) measured in several processes, one after the other, each
 * with its own warm-up and the backend's whole interleaved rounds, over a share of the time.
 *
 * Interleaving cancels what changes during a run (a server warming up, a neighbour). It cannot cancel
 * what is fixed for a process's life: how V8 compiled each hot function there, where its code and data
 * landed. On a small shared machine that moves one subject's cost against another's by several per
 * cent from one process to the next (`pnpm bench:process-spread` shows it), so a ratio measured in
 * one process carries that spread whatever its number of rounds. Over several processes, a ratio is
 * the median of every process's per-round ratios, and the report shows each process's own.
 */
import { fileURLToPath } from 'node:url';
import { forkBenchWorker, killIfRunning } from './bench-worker.js';
import { nextChildMessage } from './child-message.js';
import { parallelKeysResult, type ParallelKeysOptions, type ParallelKeysResult } from './parallel-keys.js';
import { median, throughputResult, unroundedPairedRatio, type RoundsMeasurement, type ThroughputResult } from './rounds.js';
import type { Subject } from './subjects.js';
import { UNCONTENDED_WARMUP_MS, type UncontendedOptions, type UncontendedResult } from './uncontended.js';

/** What one process measures: a section, the ids of one backend's subjects, and its share of the bounds. */
export type SectionRequest =
  | { readonly section: 'uncontended'; readonly subjects: readonly string[]; readonly options: UncontendedOptions }
  | { readonly section: 'parallel-keys'; readonly subjects: readonly string[]; readonly options: ParallelKeysOptions };

/** One subject's slices in one process, as the process reports them. */
export interface ReportedMeasurement {
  readonly subject: string;
  readonly samples: readonly number[];
  readonly roundOpsPerSec: readonly number[];
  readonly seconds: number;
}

/** What a process sends back: its slices and the failures it met. */
export interface ProcessReport {
  readonly type: 'measured';
  readonly pid: number;
  readonly measurements: readonly ReportedMeasurement[];
  readonly errors: readonly { readonly subject: string; readonly error: string }[];
}

/** The environment variable that carries a {@link SectionRequest} to a measuring process. */
export const SECTION_REQUEST_VARIABLE = 'FENCELOCK_BENCH_SECTION';

const WORKER = fileURLToPath(new URL('./throughput-worker.ts', import.meta.url));

/**
 * One process's share of `request`: the time divided by `processes`; the rounds, the warm-up and the
 * bound on cycles per slice whole (every process compiles its own code, and a slice of a subject
 * bounded by cycles, such as the in-process memory provider's, would otherwise shrink to a few
 * milliseconds, where a single collection decides its figure).
 */
export function shareOf(request: SectionRequest, processes: number): SectionRequest {
  const options = { ...request.options, maxMs: request.options.maxMs / processes };
  return { ...request, options } as SectionRequest;
}

/**
 * Every process's slices of `subjects` as one measurement per subject: round i of process p at index
 * p × rounds + i, so that round i of one subject still pairs with round i of another. A subject that
 * completed fewer slices in a process (it failed there) has them counted as 0 ops/s, as an empty
 * slice is; a subject with no cycle at all is left out, as `runInterleaved` leaves it out.
 */
export function mergeProcessReports(subjects: readonly Subject[], reports: readonly ProcessReport[], roundsPerProcess: number): RoundsMeasurement[] {
  const merged: RoundsMeasurement[] = [];
  for (const subject of subjects) {
    const measurement: RoundsMeasurement = { subject, samples: [], roundOpsPerSec: [], seconds: 0 };
    for (const report of reports) {
      const own = report.measurements.find((m) => m.subject === subject.id);
      const rounds = own?.roundOpsPerSec ?? [];
      for (let i = 0; i < roundsPerProcess; i += 1) measurement.roundOpsPerSec.push(rounds[i] ?? 0);
      for (const sample of own?.samples ?? []) measurement.samples.push(sample);
      measurement.seconds += own?.seconds ?? 0;
    }
    if (measurement.samples.length > 0) merged.push(measurement);
  }
  return merged;
}

/**
 * `ours ÷ other` in each process: the median of that process's per-round ratios (the rounds in blocks
 * of equal length, one per process; see {@link mergeProcessReports}). Empty when not measured so.
 */
export function perProcessRatios(ours: Pick<ThroughputResult, 'roundOpsPerSec' | 'processes'>, other: Pick<ThroughputResult, 'roundOpsPerSec' | 'processes'>): number[] {
  const processes = ours.processes ?? 1;
  if (processes < 2 || other.processes !== processes) return [];
  const block = Math.floor(ours.roundOpsPerSec.length / processes);
  if (block < 1 || other.roundOpsPerSec.length !== ours.roundOpsPerSec.length) return [];
  const ratios: number[] = [];
  for (let p = 0; p < processes; p += 1) {
    const slice = (rows: readonly number[]): { opsPerSec: number; roundOpsPerSec: readonly number[] } => {
      const rounds = rows.slice(p * block, (p + 1) * block);
      return { opsPerSec: median(rounds), roundOpsPerSec: rounds };
    };
    const ratio = unroundedPairedRatio(slice(ours.roundOpsPerSec), slice(other.roundOpsPerSec));
    if (Number.isFinite(ratio)) ratios.push(ratio);
  }
  return ratios;
}

/** How long one process may take: every subject's open and warm-up, its slices, and starting up. */
function processBoundMs(request: SectionRequest): number {
  const { options } = request;
  const warmupMs = request.section === 'uncontended' ? Math.max(request.options.warmupMs ?? UNCONTENDED_WARMUP_MS, options.maxMs) : options.maxMs;
  return request.subjects.length * (warmupMs + options.maxMs + 30_000) + 60_000;
}

/** Runs `request` in a new process and returns its report; rejects when the process fails or overruns. */
export async function measureInChildProcess(request: SectionRequest): Promise<ProcessReport> {
  const child = forkBenchWorker(WORKER, [], [], { ...process.env, [SECTION_REQUEST_VARIABLE]: JSON.stringify(request) });
  try {
    return await nextChildMessage<ProcessReport>(child, (message) => message.type === 'measured', processBoundMs(request), `the ${request.section} process's slices`);
  } finally {
    killIfRunning(child);
  }
}

/**
 * Measures `subjects` (of ONE backend) in `processes` processes one after the other, each with a
 * `1 / processes` share of the time (see {@link shareOf}), and merges their rounds. A
 * failure inside a process, or of a whole process, goes to `onError`; the other processes still count.
 */
export function runSectionInProcesses(
  request: Extract<SectionRequest, { section: 'uncontended' }>,
  subjects: readonly Subject[],
  processes: number,
  onError: (subject: Subject, error: unknown) => void,
  measure?: (request: SectionRequest) => Promise<ProcessReport>,
): Promise<UncontendedResult[]>;
export function runSectionInProcesses(
  request: Extract<SectionRequest, { section: 'parallel-keys' }>,
  subjects: readonly Subject[],
  processes: number,
  onError: (subject: Subject, error: unknown) => void,
  measure?: (request: SectionRequest) => Promise<ProcessReport>,
): Promise<ParallelKeysResult[]>;
export async function runSectionInProcesses(
  request: SectionRequest,
  subjects: readonly Subject[],
  processes: number,
  onError: (subject: Subject, error: unknown) => void,
  measure: (request: SectionRequest) => Promise<ProcessReport> = measureInChildProcess,
): Promise<UncontendedResult[] | ParallelKeysResult[]> {
  const share = shareOf(request, processes);
  const reports: ProcessReport[] = [];
  for (let index = 0; index < processes; index += 1) {
    try {
      const report = await measure(share);
      for (const failure of report.errors) {
        const subject = subjects.find((s) => s.id === failure.subject);
        if (subject !== undefined) onError(subject, new Error(`process ${index + 1} of ${processes}: ${failure.error}`));
      }
      reports.push(report);
    } catch (error) {
      for (const subject of subjects) onError(subject, new Error(`process ${index + 1} of ${processes}: ${error instanceof Error ? error.message : String(error)}`));
    }
  }
  const rounds = share.options.rounds ?? 1;
  const merged = mergeProcessReports(subjects, reports, rounds);
  if (share.section === 'uncontended') return merged.map((measurement) => ({ ...throughputResult(measurement), processes: reports.length }));
  const keys = share.options.keys ?? 64;
  return merged.map((measurement) => ({ ...parallelKeysResult(measurement, keys), processes: reports.length }));
}
