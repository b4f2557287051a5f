/**
 * One contending client process (scenario 2). Forked by contention.ts with IPC; argv:
 * `<subject id> <key> <worker index>`. Protocol: the worker opens its session and sends
 * `{ type: 'ready' }`; the parent sends `{ type: 'go', fromNs, untilNs, maxAcquisitions, waitMs, holdMs }`;
 * the worker loops request → acquire → hold → release until `untilNs` (process.hrtime.bigint(),
 * shared by every process on the host) or `maxAcquisitions`, then sends `{ type: 'done', events,
 * failures, cpuMicros }` and exits. The loops before `fromNs` are a warm-up that every process runs
 * together (the code paths of contention compiled and the connections busy, as in a service that has
 * been running): only acquisitions requested from `fromNs` on are reported, and only the CPU time the
 * process used from then on. Times are hrtime ns as strings (JSON has no bigint).
 */
import { subjectById } from './subjects.js';

/** One acquisition as the worker saw it. */
export interface AcquisitionEvent {
  readonly worker: number;
  /** When `lock()` was called, hrtime ns. */
  readonly requestNs: string;
  /** When `lock()` resolved. */
  readonly acquiredNs: string;
  /** When the release was started (after the hold). */
  readonly releaseNs: string;
}

/** Parent → worker start message. */
export interface GoMessage {
  readonly type: 'go';
  /** Start of the measured window (the end of the warm-up). */
  readonly fromNs: string;
  readonly untilNs: string;
  readonly maxAcquisitions: number;
  readonly waitMs: number;
  readonly holdMs: number;
}

/** Worker → parent messages. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'done';
      readonly events: AcquisitionEvent[];
      /** Failed or timed-out acquires in the measured window. */
      readonly failures: number;
      /** User + system CPU time of this process in the measured window, µs. */
      readonly cpuMicros: number;
      /** Acquisitions in the warm-up (not reported as events). */
      readonly warmupAcquisitions: number;
      readonly error?: string;
    };

const [subjectId, key, indexText] = process.argv.slice(2);
if (subjectId === undefined || key === undefined || indexText === undefined || process.send === undefined) {
  throw new Error('usage: contention-worker <subject id> <key> <worker index> (forked with IPC)');
}
const worker = Number(indexText);
const send = (message: WorkerMessage): Promise<void> =>
  new Promise((resolve) => {
    process.send?.(message, undefined, {}, () => resolve());
  });

const session = await subjectById(subjectId).open();
const go = await new Promise<GoMessage>((resolve) => {
  process.once('message', (message) => resolve(message as GoMessage));
  void send({ type: 'ready' });
});

const from = BigInt(go.fromNs);
const until = BigInt(go.untilNs);
const events: AcquisitionEvent[] = [];
let failures = 0;
let warmupFailures = 0;
let warmupAcquisitions = 0;
let error: string | undefined;
let cpuFrom: NodeJS.CpuUsage | undefined;
// Bounded by count, by time, and by consecutive failures (in the warm-up too).
while (events.length < go.maxAcquisitions && process.hrtime.bigint() < until && failures < 20 && warmupFailures < 20) {
  const requestNs = process.hrtime.bigint();
  const measured = requestNs >= from;
  if (measured) cpuFrom ??= process.cpuUsage();
  let release;
  try {
    const remainingMs = Number((until - requestNs) / 1_000_000n);
    release = await session.lock(key, Math.max(1, Math.min(go.waitMs, remainingMs)));
  } catch (cause) {
    if (!measured) {
      warmupFailures += 1;
      continue;
    }
    failures += 1;
    error = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    continue;
  }
  const acquiredNs = process.hrtime.bigint();
  if (go.holdMs > 0) await new Promise((resolve) => setTimeout(resolve, go.holdMs));
  const releaseNs = process.hrtime.bigint();
  await release();
  if (measured) events.push({ worker, requestNs: String(requestNs), acquiredNs: String(acquiredNs), releaseNs: String(releaseNs) });
  else warmupAcquisitions += 1;
}
const cpu = cpuFrom === undefined ? { user: 0, system: 0 } : process.cpuUsage(cpuFrom);
await session.close();
await send({ type: 'done', events, failures, cpuMicros: cpu.user + cpu.system, warmupAcquisitions, ...(error === undefined ? {} : { error }) });
process.disconnect();
