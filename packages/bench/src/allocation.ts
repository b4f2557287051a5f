/**
 * Scenario 4b, allocation and client CPU per cycle: one client, acquire + release of one key (as in
 * scenario 1), and what each cycle costs the client process (see cycle-costs.ts).
 *
 * CPU and bytes are measured in the bench's own process, as users run the code (inlining on): CPU in
 * interleaved rounds of the backend's subjects (as the uncontended ops/s are, see rounds.ts: on a
 * noisy machine one subject's quiet minute is not compared with another's busy one), bytes in one
 * pass per subject (they do not depend on the machine's load). Who
 * allocated them is measured in a forked process with `--no-turbo-inlining` (allocation-worker.ts):
 * with inlining, the profile charges a callee's allocations to the function it was inlined into,
 * fencelock's to the loop that calls it or ioredis' to fencelock. Without it, code allocates a few
 * per cent more (less escape analysis), so the split's own total is shown next to the exact one.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { SplitMessage } from './allocation-worker.js';
import { forkBenchWorker, killIfRunning } from './bench-worker.js';
import { nextChildMessage } from './child-message.js';
import { measureBytes, measureCpu, runBounded, type AllocationSplit, type CycleCosts, type OwnerShare } from './cycle-costs.js';
import { roundOrder } from './round-order.js';
import { median } from './rounds.js';
import { round } from './stats.js';
import { subjectFields, type Backend, type LockSession, type Subject, type SubjectFields } from './subjects.js';

/** Bounds of one allocation measurement. */
export interface AllocationOptions {
  /** Cycles of each measured pass per subject: the CPU rounds together, the bytes, the split. */
  readonly cycles: number;
  /** Most time of each pass per subject, ms. */
  readonly maxMs: number;
  /** Rounds the CPU pass is split into (default 1). */
  readonly rounds?: number;
  /** Unmeasured cycles before the passes (default min(2000, cycles)). */
  readonly warmupCycles?: number;
  /** Mean bytes between two heap-profile samples of the split. @default 1024 */
  readonly samplingIntervalBytes?: number;
  /**
   * For subjects whose server reports its own time: reads the µs the server has spent on this
   * subject's commands so far (see server-counters.ts). Read around each CPU round, it gives the
   * server time per cycle.
   */
  readonly serverMicros?: (subject: Subject) => (() => Promise<number>) | undefined;
}

/** One subject's allocation and CPU figures. */
export interface AllocationResult extends SubjectFields, CycleCosts {
  /** CPU per cycle of each round, µs, in round order (index i = round i). */
  readonly roundCpuMicrosPerCycle: readonly number[];
  /**
   * Server time per cycle, µs: what the server spent running the cycle's commands (the median of
   * the rounds); absent where the server does not report it.
   */
  readonly serverMicrosPerCycle?: number;
  /**
   * Wall time per cycle of the CPU rounds, µs (the median of the rounds): the same cycles as the CPU
   * and server figures, so that wall − CPU − server is the time the cycle waited on the network and
   * the scheduler.
   */
  readonly wallMicrosPerCycle?: number;
  /** Who allocated, from the pass without inlining (its bytes per cycle are `split.bytesPerCycle`). */
  readonly split: AllocationSplit;
  /**
   * Bytes per cycle of the implementation measured (from the split): fencelock's own, the peer
   * library's, or the raw protocol's (written in the bench: the harness).
   */
  readonly ownBytesPerCycle: number;
  /** Bytes per cycle of the client libraries under it (ioredis and its dependencies), 0 when there are none. */
  readonly clientLibraryBytesPerCycle: number;
  /** The owner whose share is "own": `fencelock`, the peer's package, or `harness` (a raw baseline). */
  readonly ownOwner?: string;
}

/**
 * The backends whose subjects the bench measures this way: core alone, and every backend with a raw
 * or peer baseline on the same client library (PostgreSQL's peer opens a connection per lock).
 */
export const ALLOCATION_BACKENDS: readonly Backend[] = ['memory', 'redis', 'redlock', 'zookeeper', 'etcd'];

/** One cycle of the measurement: acquire `key` (waiting up to 5 s) and release it. */
export function lockCycle(session: LockSession, key: string): () => Promise<void> {
  return async () => {
    await (await session.lock(key, 5_000))();
  };
}

const WORKER = fileURLToPath(new URL('./allocation-worker.ts', import.meta.url));

/**
 * Measures `subjects` (give the subjects of ONE backend, so that they share the same server): CPU per
 * cycle in interleaved rounds, bytes per cycle, then who allocated them in a forked process each.
 * A subject that fails is reported through `onError` and left out.
 */
export async function runAllocationGroup(
  subjects: readonly Subject[],
  options: AllocationOptions,
  onError: (subject: Subject, error: unknown) => void = () => undefined,
): Promise<AllocationResult[]> {
  const rounds = Math.max(1, options.rounds ?? 1);
  const open: {
    subject: Subject;
    session: LockSession;
    cycle: () => Promise<void>;
    serverMicros: (() => Promise<number>) | undefined;
    rounds: { cycles: number; micros: number; wallMicros: number; serverMicros: number | undefined }[];
  }[] = [];
  try {
    for (const subject of subjects) {
      try {
        const session = await subject.open();
        open.push({ subject, session, cycle: lockCycle(session, `allocation:${randomUUID()}`), serverMicros: options.serverMicros?.(subject), rounds: [] });
      } catch (error) {
        onError(subject, error);
      }
    }
    const measured: { subject: Subject; costs: CycleCosts; roundCpu: number[]; serverMicros: number | undefined; wallMicros: number }[] = [];
    const failed = new Set<Subject>();
    const attempt = async (subject: Subject, step: () => Promise<void>): Promise<void> => {
      if (failed.has(subject)) return;
      try {
        await step();
      } catch (error) {
        failed.add(subject);
        onError(subject, error);
      }
    };
    for (const entry of open) await attempt(entry.subject, async () => void (await runBounded(entry.cycle, options.warmupCycles ?? Math.min(2_000, options.cycles), options.maxMs)));
    // A balanced order (see round-order.ts): none always first after a pause, nor always right after the same other.
    for (let index = 0; index < rounds; index += 1) {
      for (const at of roundOrder(open.length, index)) {
        const entry = open[at]!;
        await attempt(entry.subject, async () => {
          const serverBefore = await entry.serverMicros?.();
          const slice = await measureCpu(entry.cycle, Math.max(1, Math.floor(options.cycles / rounds)), options.maxMs / rounds);
          const serverAfter = await entry.serverMicros?.();
          const server = serverBefore === undefined || serverAfter === undefined || slice.cycles === 0 ? undefined : (serverAfter - serverBefore) / slice.cycles;
          entry.rounds.push({ cycles: slice.cycles, micros: slice.microsPerCycle, wallMicros: slice.wallMicrosPerCycle, serverMicros: server });
        });
      }
    }
    for (const entry of open) {
      await attempt(entry.subject, async () => {
        const bytes = await measureBytes(entry.cycle, options.cycles, options.maxMs);
        const roundCpu = entry.rounds.map((r) => r.micros);
        const roundServer = entry.rounds.flatMap((r) => (r.serverMicros === undefined ? [] : [r.serverMicros]));
        measured.push({
          subject: entry.subject,
          roundCpu,
          serverMicros: roundServer.length === 0 ? undefined : round(median(roundServer), 2),
          wallMicros: round(median(entry.rounds.map((r) => r.wallMicros)), 2),
          costs: {
            cpuCycles: entry.rounds.reduce((total, r) => total + r.cycles, 0),
            cpuMicrosPerCycle: round(median(roundCpu), 2),
            allocationCycles: bytes.cycles,
            bytesPerCycle: bytes.bytesPerCycle,
          },
        });
      });
    }
    await Promise.all(open.splice(0).map((entry) => entry.session.close().catch(() => undefined)));
    const results: AllocationResult[] = [];
    for (const { subject, costs, roundCpu, serverMicros, wallMicros } of measured) {
      try {
        const result = { ...allocationResult(subject, costs, roundCpu, await forkedSplit(subject, options)), wallMicrosPerCycle: wallMicros };
        results.push(serverMicros === undefined ? result : { ...result, serverMicrosPerCycle: serverMicros });
      } catch (error) {
        onError(subject, error);
      }
    }
    return results;
  } finally {
    await Promise.all(open.map((entry) => entry.session.close().catch(() => undefined)));
  }
}

/** Measures one subject (one round); rejects on failure. */
export async function runAllocation(subject: Subject, options: AllocationOptions): Promise<AllocationResult> {
  let failure: unknown;
  const [result] = await runAllocationGroup([subject], options, (_, error) => (failure ??= error));
  if (result === undefined) throw failure instanceof Error ? failure : new Error(`allocation of ${subject.id} failed: ${String(failure)}`);
  return result;
}

function allocationResult(subject: Subject, costs: CycleCosts, roundCpu: readonly number[], split: AllocationSplit): AllocationResult {
  const own = subject.kind === 'fencelock' ? 'fencelock' : subject.kind === 'raw' ? 'harness' : subject.package;
  const sum = (keep: (share: OwnerShare) => boolean): number => round(split.owners.filter(keep).reduce((total, share) => total + share.bytesPerCycle, 0), 1);
  return {
    ...subjectFields(subject),
    ...costs,
    roundCpuMicrosPerCycle: roundCpu,
    split,
    ...(own === undefined ? {} : { ownOwner: own }),
    ownBytesPerCycle: sum((share) => share.name === own),
    clientLibraryBytesPerCycle: sum((share) => share.group === 'library' && share.name !== own),
  };
}

async function forkedSplit(subject: Subject, options: AllocationOptions): Promise<AllocationSplit> {
  const child = forkBenchWorker(WORKER, [subject.id, String(options.cycles), String(options.maxMs), String(options.samplingIntervalBytes ?? 1_024)], ['--no-turbo-inlining']);
  try {
    // A warm-up and a pass, each bounded by maxMs, plus starting up and opening the subject.
    const message = await nextChildMessage<SplitMessage>(child, () => true, 3 * options.maxMs + 60_000, 'the allocation worker\'s result');
    if (message.type === 'failed') throw new Error(`allocation worker for ${subject.id} failed: ${message.error}`);
    return message.split;
  } finally {
    killIfRunning(child);
  }
}

