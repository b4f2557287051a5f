/**
 * How much one process's measurement says: the same subjects measured in several processes, each
 * in interleaved rounds (as `pnpm bench` measures them in its one process), client CPU and wall time
 * per uncontended cycle. Interleaving cancels what changes during a run (a server warming up, a
 * neighbour); it cannot cancel what is fixed for a process's life (how V8 compiled each hot function
 * there, where its code and data landed in memory), and on a small shared machine that moves a
 * subject's cost against another's by several per cent from one process to the next. The spread of
 * the per-process ratios shows how far one run's ratio can be trusted, and the median over processes
 * what is left of it.
 */
import { median, runInterleaved } from './rounds.js';
import type { Subject } from './subjects.js';
import { openUncontended } from './uncontended.js';

/** How each process measures. */
export interface SpreadOptions {
  /** Interleaved rounds per process. */
  readonly rounds: number;
  /** Measured cycles per subject per round. */
  readonly cyclesPerRound: number;
  /** Unmeasured cycles per subject before the first round. */
  readonly warmupCycles: number;
  /** Bound on each measured slice and on each warm-up, ms. */
  readonly maxSliceMs: number;
}

/** One subject in one process: medians of its rounds, µs per cycle. */
export interface SubjectCosts {
  readonly subject: string;
  readonly cpuMicros: number;
  readonly wallMicros: number;
  readonly cycles: number;
}

/**
 * Measures `subjects` in this process as section 1 of `pnpm bench` does (its uncontended loop, warm-up
 * and interleaved rounds), with the client CPU of each slice besides. Rejects with the first failure.
 */
export async function measureInThisProcess(subjects: readonly Subject[], options: SpreadOptions): Promise<SubjectCosts[]> {
  const cpuPerCycle = new Map<Subject, number[]>();
  let failure: unknown;
  const measured = await runInterleaved(
    subjects,
    async (subject) => {
      const runner = await openUncontended(subject, options.warmupCycles, options.maxSliceMs);
      const cpu: number[] = [];
      cpuPerCycle.set(subject, cpu);
      return {
        async slice(maxMs, maxCycles) {
          const start = process.cpuUsage();
          const samples = await runner.slice(maxMs, maxCycles);
          const used = process.cpuUsage(start);
          if (samples.length > 0) cpu.push((used.user + used.system) / samples.length);
          return samples;
        },
        close: () => runner.close(),
      };
    },
    { rounds: options.rounds, sliceMs: options.maxSliceMs, maxCyclesPerSlice: options.cyclesPerRound },
    (_, error) => {
      failure ??= error;
    },
  );
  if (failure !== undefined) throw failure;
  return measured.map((measurement) => ({
    subject: measurement.subject.id,
    cpuMicros: median(cpuPerCycle.get(measurement.subject) ?? []),
    wallMicros: median(measurement.roundOpsPerSec.filter((ops) => ops > 0).map((ops) => 1e6 / ops)),
    cycles: measurement.samples.length,
  }));
}

/** What the processes measured, subject by subject against the first subject (`ours`). */
export interface SpreadSummary {
  readonly ours: string;
  readonly processes: number;
  readonly rows: readonly {
    readonly subject: string;
    /** ours ÷ this subject, CPU per cycle, one per process (below 1: ours spends less). */
    readonly cpuRatios: readonly number[];
    /** this subject ÷ ours, wall per cycle, one per process: the throughput ratio ours ÷ this (above 1: ours is faster). */
    readonly throughputRatios: readonly number[];
  }[];
}

/** The per-process ratios of every subject to the first one; processes that lack a subject are left out of its row. */
export function summarizeSpread(perProcess: readonly (readonly SubjectCosts[])[]): SpreadSummary {
  const ours = perProcess[0]?.[0]?.subject ?? '';
  const subjects = [...new Set(perProcess.flatMap((costs) => costs.map((cost) => cost.subject)))].filter((subject) => subject !== ours);
  return {
    ours,
    processes: perProcess.length,
    rows: subjects.map((subject) => {
      const cpuRatios: number[] = [];
      const throughputRatios: number[] = [];
      for (const costs of perProcess) {
        const mine = costs.find((cost) => cost.subject === ours);
        const theirs = costs.find((cost) => cost.subject === subject);
        if (mine === undefined || theirs === undefined || mine.cycles === 0 || theirs.cycles === 0) continue;
        cpuRatios.push(mine.cpuMicros / theirs.cpuMicros);
        throughputRatios.push(theirs.wallMicros / mine.wallMicros);
      }
      return { subject, cpuRatios, throughputRatios };
    }),
  };
}

/** The summary as a table: per subject, each process's ratios, their range and their median. */
export function spreadMarkdown(summary: SpreadSummary, command: string): string[] {
  const list = (values: readonly number[]): string => values.map((value) => value.toFixed(2)).join(' ');
  const range = (values: readonly number[]): string => (values.length === 0 ? '—' : `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`);
  const mid = (values: readonly number[]): string => (values.length === 0 ? '—' : median(values).toFixed(2));
  return [
    `${summary.ours} against each subject measured beside it, one ratio per process (${summary.processes} processes; command: \`${command}\`).`,
    'Throughput = their wall µs per cycle ÷ ours (above 1: ours is faster); CPU = our client CPU µs per cycle ÷ theirs (below 1: ours spends less). Each per-process figure is the median of its interleaved rounds.',
    '',
    '| against | throughput, per process | range | median | client CPU, per process | range | median |',
    '|---|---|---|---:|---|---|---:|',
    ...summary.rows.map((row) => `| ${row.subject} | ${list(row.throughputRatios)} | ${range(row.throughputRatios)} | ${mid(row.throughputRatios)} | ${list(row.cpuRatios)} | ${range(row.cpuRatios)} | ${mid(row.cpuRatios)} |`),
  ];
}
