/**
 * Where an uncontended throughput gap goes, microsecond by microsecond, with no profiler attached.
 * A sequential loop's throughput is one over its mean cycle time, so a ratio against a baseline is
 * a difference of mean cycle times, and that difference adds up exactly from three parts measured
 * in the same slices:
 *
 * - **client CPU**: the process's user + system CPU per cycle (`process.cpuUsage`), unprofiled;
 * - **server CPU**: the CPU the backend's server processes used per cycle, every member and thread
 *   (`/proc`, see `processCpuMicros`): the commands or transactions and everything around them,
 *   parsing, answering, replicating, writing to disk; for Redis, the time spent running the
 *   commands (`INFO commandstats`) is shown apart;
 * - **rest** = wall − client CPU − server CPU: the network and waiting, to be scheduled, to be woken,
 *   for a disk.
 *
 * The protocol twin (the same requests with no library, `subjects-protocol*.ts`) cuts each gap in
 * two that add up: **requests** (twin − baseline: what sending these requests costs, whoever sends
 * them) and **library** (fencelock − twin: what fencelock's code costs on top). Profilers slow a
 * cycle of ~150 µs by tens of per cent and move it unevenly; this account takes the sizes from
 * unprofiled loops, and `bench:perf-split` says which functions the client CPU went to.
 */
import { runInterleaved, type RoundsMeasurement, type SliceRunner } from './rounds.js';
import { percentile, round } from './stats.js';
import { subjectFields, type Subject, type SubjectFields } from './subjects.js';
import { openParallelKeys } from './parallel-keys.js';
import { openUncontended } from './uncontended.js';

/** One subject's mean cycle over every slice it ran, µs. */
export interface CycleCost extends SubjectFields {
  readonly cycles: number;
  /** Slice time ÷ cycles: one over the (aggregate) throughput. */
  readonly wall: number;
  /** The quickest tenth and the median cycle's latency, µs: a gap there is code on the path, not waiting. */
  readonly p10: number;
  readonly p50: number;
  /** Client CPU (user + system) per cycle. */
  readonly cpu: number;
  /** The servers' CPU per cycle; `undefined` where the backend reports none. */
  readonly serverCpu: number | undefined;
  /** Of that, running the commands (Redis `INFO commandstats`). */
  readonly serverCommands: number | undefined;
}

/** A difference of two cycles, µs: `wall` = `cpu` + `serverCpu` + `rest` (`serverCommands` is part of `serverCpu`). */
export interface GapPart {
  readonly wall: number;
  readonly cpu: number;
  readonly serverCpu: number | undefined;
  readonly serverCommands: number | undefined;
  readonly rest: number;
}

/** One target's gap: fencelock's cycle against the baseline's, cut at the twin. */
export interface GapAccount {
  readonly fencelock: string;
  readonly baseline: string;
  /** fencelock's throughput ÷ the baseline's (mean cycles). */
  readonly ratio: number;
  /** fencelock − baseline. */
  readonly total: GapPart;
  /** twin − baseline; `undefined` when the baseline is the twin. */
  readonly requests: GapPart | undefined;
  /** fencelock − twin. */
  readonly library: GapPart;
}

const minus = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : a - b);

/** `a − b`, the rest being what the two CPUs leave of the wall time. */
export function gapPart(a: CycleCost, b: CycleCost): GapPart {
  const wall = a.wall - b.wall;
  const cpu = a.cpu - b.cpu;
  const serverCpu = minus(a.serverCpu, b.serverCpu);
  return { wall, cpu, serverCpu, serverCommands: minus(a.serverCommands, b.serverCommands), rest: wall - cpu - (serverCpu ?? 0) };
}

/** Readers of what the servers have used so far, µs (see `server-counters.ts`). */
export interface ServerReaders {
  /** The server processes' CPU. */
  readonly cpu?: (() => number) | undefined;
  /** Redis: the time spent running the commands the clients sent. */
  readonly commands?: (() => Promise<number>) | undefined;
}

/** The account of fencelock against `baseline`, cut at `twin`. */
export function gapAccount(fencelock: CycleCost, twin: CycleCost, baseline: CycleCost): GapAccount {
  return {
    fencelock: fencelock.subject,
    baseline: baseline.subject,
    ratio: baseline.wall / fencelock.wall,
    total: gapPart(fencelock, baseline),
    requests: baseline.subject === twin.subject ? undefined : gapPart(twin, baseline),
    library: gapPart(fencelock, twin),
  };
}

/** Bounds of one backend's measurement. */
export interface GapAccountOptions {
  /** Concurrent loops on distinct keys (1: the sequential loop; 64: scenario 3a's). */
  readonly keys: number;
  readonly rounds: number;
  readonly sliceMs: number;
  readonly warmupCycles: number;
  readonly warmupMs: number;
}

/**
 * Runs `subjects` (one backend's) uncontended in interleaved rounds, reading the process's CPU and
 * the `servers` (when given) around every slice, the servers outside the slice's own time.
 */
export async function measureCycleCosts(
  subjects: readonly Subject[],
  options: GapAccountOptions,
  servers: ServerReaders | undefined,
  onError: (subject: Subject, error: unknown) => void,
): Promise<CycleCost[]> {
  const cpu = new Map<string, number>();
  const serverCpu = new Map<string, number>();
  const serverCommands = new Map<string, number>();
  const add = (into: Map<string, number>, id: string, micros: number): void => {
    into.set(id, (into.get(id) ?? 0) + micros);
  };
  const measured = await runInterleaved(
    subjects,
    async (subject): Promise<SliceRunner> => {
      const runner =
        options.keys > 1
          ? await openParallelKeys(subject, options.keys, options.sliceMs, Number.MAX_SAFE_INTEGER)
          : await openUncontended(subject, options.warmupCycles, options.warmupMs);
      return {
        async slice(maxMs, maxCycles) {
          const commandsBefore = await servers?.commands?.();
          // The servers' CPU read last before the slice and first after: reading the command
          // counters costs the servers CPU too.
          const serverBefore = servers?.cpu?.();
          const cpuBefore = process.cpuUsage();
          const samples = await runner.slice(maxMs, maxCycles);
          const used = process.cpuUsage(cpuBefore);
          const serverAfter = servers?.cpu?.();
          const commandsAfter = await servers?.commands?.();
          add(cpu, subject.id, used.user + used.system);
          if (serverBefore !== undefined && serverAfter !== undefined) add(serverCpu, subject.id, serverAfter - serverBefore);
          if (commandsBefore !== undefined && commandsAfter !== undefined) add(serverCommands, subject.id, commandsAfter - commandsBefore);
          return samples;
        },
        close: () => runner.close(),
      };
    },
    { rounds: options.rounds, sliceMs: options.sliceMs, maxCyclesPerSlice: Number.MAX_SAFE_INTEGER },
    onError,
  );
  return measured.map((m) => cycleCost(m, cpu.get(m.subject.id) ?? Number.NaN, serverCpu.get(m.subject.id), serverCommands.get(m.subject.id)));
}

function cycleCost(measurement: RoundsMeasurement, cpuMicros: number, serverCpuMicros: number | undefined, serverCommandMicros: number | undefined): CycleCost {
  const cycles = measurement.samples.length;
  const perCycle = (micros: number | undefined): number | undefined => (micros === undefined ? undefined : micros / cycles);
  const sorted = measurement.samples.map((ms) => ms * 1_000).sort((a, b) => a - b);
  return {
    ...subjectFields(measurement.subject),
    cycles,
    wall: (measurement.seconds * 1e6) / cycles,
    p10: percentile(sorted, 10),
    p50: percentile(sorted, 50),
    cpu: cpuMicros / cycles,
    serverCpu: perCycle(serverCpuMicros),
    serverCommands: perCycle(serverCommandMicros),
  };
}

const fmt = (value: number | undefined, digits = 1): string => (value === undefined || !Number.isFinite(value) ? '—' : round(value, digits).toFixed(digits));
const signed = (value: number | undefined): string =>
  value === undefined || !Number.isFinite(value) ? '—' : `${value < 0 ? '−' : '+'}${fmt(Math.abs(value))}`;

/** The tables: every subject's cycle, then each target's gap with its two parts. */
export function gapAccountMarkdown(costs: readonly CycleCost[], accounts: readonly GapAccount[], command: string, keys = 1): string[] {
  const loop = keys > 1 ? `${keys} concurrent acquire + release loops on distinct keys, per cycle of their aggregate throughput` : 'uncontended acquire + release, one key';
  const label = (id: string): string => costs.find((c) => c.subject === id)?.label ?? id;
  const part = (p: GapPart | undefined): string[] =>
    p === undefined ? ['', '', '', '', ''] : [signed(p.wall), signed(p.cpu), signed(p.serverCpu), signed(p.serverCommands), signed(p.rest)];
  const parts = ['wall', 'client CPU', 'server CPU', 'of it commands', 'rest'];
  return [
    `µs per cycle, one client, ${loop}, each backend's subjects interleaved in rounds in one process, no profiler (command: \`${command}\`).`,
    "Wall = slice time ÷ cycles (one over the throughput); p10 and p50 = the quickest tenth and the median cycle's latency; client CPU = `process.cpuUsage()`",
    "over the same slices; server CPU = the backend's server processes' CPU over the same slices (every member, every thread, from `/proc`; all",
    'masters for Redlock), of it commands = the time Redis spent running the commands (`INFO commandstats`); rest = wall − client CPU − server CPU:',
    'the network and waiting (to be scheduled, woken, for a disk).',
    '',
    '| backend | implementation | cycles | wall | p10 | p50 | client CPU | server CPU | of it commands | rest |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...costs.map(
      (c) =>
        `| ${c.backend} | ${c.label} | ${c.cycles} | ${fmt(c.wall)} | ${fmt(c.p10)} | ${fmt(c.p50)} | ${fmt(c.cpu)} | ${fmt(c.serverCpu)} | ${fmt(c.serverCommands)} | ${fmt(c.wall - c.cpu - (c.serverCpu ?? 0))} |`,
    ),
    '',
    "Each target's gap (fencelock − baseline, µs per cycle) and its two parts, which add up to it: requests = twin − baseline, library = fencelock − twin.",
    '',
    `| fencelock ÷ baseline | ratio | ${['gap', 'requests', 'library'].map((name) => parts.map((p, i) => (i === 0 ? `${name}: ${p}` : p)).join(' | ')).join(' | ')} |`,
    `|---|---:|${'---:|'.repeat(parts.length * 3)}`,
    ...accounts.map((a) => `| ${label(a.fencelock)} ÷ ${label(a.baseline)} | ${fmt(a.ratio, 2)} | ${[...part(a.total), ...part(a.requests), ...part(a.library)].join(' | ')} |`),
  ];
}
