/**
 * Scenario 2, contention: N client PROCESSES (default 4) loop acquire → hold → release on one key.
 * Each process records hrtime stamps (one monotonic clock for every process on the host); the
 * parent merges them in acquisition order and derives throughput, hand-off latency (a holder's
 * release to the acquire of a client that was already waiting), the share of acquisitions that
 * went to a different client than the last holder, and the longest wait.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { forkBenchWorker, killIfRunning } from './bench-worker.js';
import { nextChildMessage } from './child-message.js';
import type { AcquisitionEvent, GoMessage, WorkerMessage } from './contention-worker.js';
import { round, summarize } from './stats.js';
import { subjectFields, type Subject, type SubjectFields } from './subjects.js';

/**
 * How long the bench's contention runs contend before they are measured, ms: long enough for the
 * paths of a contended acquire to be compiled (a 3 s window measured from a cold start spent about a
 * fifth of its CPU on that) and short beside the window.
 */
export const CONTENTION_WARMUP_MS = 1_000;

/** Bounds of one contention measurement. */
export interface ContentionOptions {
  /** Client processes (default 4). */
  readonly clients?: number;
  /** Measuring window, ms. */
  readonly maxMs: number;
  /** Most acquisitions per client. */
  readonly maxAcquisitionsPerClient: number;
  /** Longest single wait, ms (default min(2000, maxMs)). */
  readonly waitMs?: number;
  /** How long each holder keeps the lock, ms (default 1). */
  readonly holdMs?: number;
  /**
   * How long the processes contend before the measured window opens, ms (default 0): what they do
   * then is not counted (see contention-worker.ts).
   */
  readonly warmupMs?: number;
}

/** One subject's contention figures. */
export interface ContentionResult extends SubjectFields {
  readonly clients: number;
  readonly acquisitions: number;
  readonly seconds: number;
  readonly acquisitionsPerSec: number;
  /**
   * From a holder's release to the first grant to a client that was already waiting at that release,
   * ms (if the releaser barges back in first, the hand-off includes its next hold).
   */
  readonly handoffP50Ms: number;
  readonly handoffP90Ms: number;
  readonly handoffP99Ms: number;
  readonly handoffMaxMs: number;
  readonly handoffs: number;
  /** Share of consecutive acquisitions that went to a different client than the last holder (0–1). */
  readonly differentClientShare: number;
  /** Of the releases with another client waiting, the share where a waiting client got the lock next (0–1). */
  readonly waiterWinShare: number;
  /** Longest time from `lock()` to its grant, ms. */
  readonly maxWaitMs: number;
  /** Acquisitions per client, by client index (every client making progress?). */
  readonly perClient: readonly number[];
  /** Acquires that timed out or failed. */
  readonly failures: number;
  /**
   * CPU time (user + system) the client processes used in their loops, per acquisition, µs: on a
   * machine with fewer cores than processes, what each hand-off costs the others.
   */
  readonly clientCpuPerAcquisitionUs: number;
  /** Acquisitions before the measured window (see {@link ContentionOptions.warmupMs}), not counted above. */
  readonly warmupAcquisitions: number;
  readonly lastError?: string;
}

const WORKER = fileURLToPath(new URL('./contention-worker.ts', import.meta.url));


/** Measures `subject` with several contending processes. */
export async function runContention(subject: Subject, options: ContentionOptions): Promise<ContentionResult> {
  // Locks of an in-process provider do not exclude across processes: nothing to measure.
  if (subject.inProcess === true) throw new Error(`${subject.id} only locks within one process`);
  const clients = options.clients ?? 4;
  const waitMs = options.waitMs ?? Math.min(2_000, options.maxMs);
  const key = `contention:${randomUUID()}`;
  const children = Array.from({ length: clients }, (_, index) =>
    forkBenchWorker(WORKER, [subject.id, key, String(index)]),
  );
  try {
    await Promise.all(children.map((child) => nextChildMessage<WorkerMessage>(child, (m) => m.type === 'ready', 30_000, "a contention worker's 'ready'")));
    const warmupNs = BigInt(Math.round((options.warmupMs ?? 0) * 1e6));
    const startNs = process.hrtime.bigint() + warmupNs;
    const go: GoMessage = {
      type: 'go',
      fromNs: String(startNs),
      untilNs: String(startNs + BigInt(Math.round(options.maxMs * 1e6))),
      maxAcquisitions: options.maxAcquisitionsPerClient,
      waitMs,
      holdMs: options.holdMs ?? 1,
    };
    const done = children.map((child) =>
      nextChildMessage<WorkerMessage>(child, (m) => m.type === 'done', (options.warmupMs ?? 0) + options.maxMs + waitMs + 30_000, "a contention worker's 'done'"),
    );
    for (const child of children) child.send(go);
    const reports = (await Promise.all(done)) as Extract<WorkerMessage, { type: 'done' }>[];
    const events = reports.flatMap((report) => report.events).sort((a, b) => compare(a.acquiredNs, b.acquiredNs));
    return analyse(subject, clients, startNs, events, reports);
  } finally {
    for (const child of children) killIfRunning(child);
  }
}

function compare(a: string, b: string): number {
  const d = BigInt(a) - BigInt(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

const ms = (fromNs: string | bigint, toNs: string): number => Number(BigInt(toNs) - BigInt(fromNs)) / 1e6;

function analyse(
  subject: Subject,
  clients: number,
  startNs: bigint,
  events: readonly AcquisitionEvent[],
  reports: readonly Extract<WorkerMessage, { type: 'done' }>[],
): ContentionResult {
  // Per client, its acquisitions in grant order (a client has at most one request pending).
  const byWorker = Array.from({ length: clients }, (_, worker) => events.filter((event) => event.worker === worker));
  /** The first grant to `worker` after `ns`, if that request was already pending at `ns`. */
  const pendingGrant = (worker: number, ns: bigint): AcquisitionEvent | undefined => {
    const list = byWorker[worker] ?? [];
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (BigInt(list[mid]?.acquiredNs ?? '0') > ns) hi = mid;
      else lo = mid + 1;
    }
    const next = list[lo];
    return next !== undefined && BigInt(next.requestNs) <= ns ? next : undefined;
  };
  const handoffs: number[] = [];
  let releasesWithWaiters = 0;
  let waiterWon = 0;
  let different = 0;
  for (let i = 0; i < events.length; i += 1) {
    const current = events[i];
    if (current === undefined) continue;
    const next = events[i + 1];
    if (next !== undefined && next.worker !== current.worker) different += 1;
    // Hand-off: from this release to the first grant to a client that was already waiting then
    // (the releaser barging back in first does not count as a hand-off, it delays it).
    const releaseNs = BigInt(current.releaseNs);
    let first: AcquisitionEvent | undefined;
    for (let worker = 0; worker < clients; worker += 1) {
      if (worker === current.worker) continue;
      const grant = pendingGrant(worker, releaseNs);
      if (grant !== undefined && (first === undefined || BigInt(grant.acquiredNs) < BigInt(first.acquiredNs))) first = grant;
    }
    if (first === undefined) continue;
    releasesWithWaiters += 1;
    handoffs.push(ms(releaseNs, first.acquiredNs));
    if (next !== undefined && next === first) waiterWon += 1;
  }
  const last = events.at(-1);
  const seconds = last === undefined ? 0 : ms(startNs, last.releaseNs) / 1000;
  const handoff = summarize(handoffs);
  const waits = summarize(events.map((event) => ms(event.requestNs, event.acquiredNs)));
  const perClient = Array.from({ length: clients }, (_, worker) => events.filter((event) => event.worker === worker).length);
  const lastError = reports.find((report) => report.error !== undefined)?.error;
  return {
    ...subjectFields(subject),
    clients,
    acquisitions: events.length,
    seconds: round(seconds),
    acquisitionsPerSec: seconds > 0 ? round(events.length / seconds, 1) : 0,
    handoffP50Ms: round(handoff.p50),
    handoffP90Ms: round(handoff.p90),
    handoffP99Ms: round(handoff.p99),
    handoffMaxMs: round(handoff.max),
    handoffs: handoffs.length,
    differentClientShare: events.length > 1 ? round(different / (events.length - 1)) : 0,
    waiterWinShare: releasesWithWaiters > 0 ? round(waiterWon / releasesWithWaiters) : 0,
    maxWaitMs: round(waits.max),
    perClient,
    failures: reports.reduce((sum, report) => sum + report.failures, 0),
    warmupAcquisitions: reports.reduce((sum, report) => sum + report.warmupAcquisitions, 0),
    clientCpuPerAcquisitionUs: events.length > 0 ? round(reports.reduce((sum, report) => sum + report.cpuMicros, 0) / events.length, 1) : Number.NaN,
    ...(lastError === undefined ? {} : { lastError }),
  };
}
