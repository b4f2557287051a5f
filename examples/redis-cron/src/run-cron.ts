import { randomUUID } from 'node:crypto';
import { monotonicNow } from '@fencelock/core';
import { Redis } from 'ioredis';
import type { LockMode, TickReport } from './protocol.js';
import { ReportStore, type NightlyReport } from './report-store.js';
import { WorkerPool } from './worker-pool.js';

/** One firing of the schedule: the date whose report is due, and how workers take its lock. */
export interface CronTick {
  readonly date: string;
  readonly mode: LockMode;
}

/** Options of {@link runCron}. */
export interface CronOptions {
  /** `redis://` URL of the Redis holding locks and reports. */
  readonly redisUrl: string;
  readonly ticks: readonly CronTick[];
  /** Worker processes; the last one's clock runs late, so it fires after the others finished. @default 3 */
  readonly workers?: number;
  /** Lock TTL, in ms. @default 1_000 */
  readonly ttlMs?: number;
  /** How long one report takes to build, in ms (longer than the TTL, to show automatic extension). @default 1_500 */
  readonly jobMs?: number;
  /** Where the timeline goes. @default console.log */
  readonly print?: (line: string) => void;
  /** Called with each worker's process id as soon as it is forked (to clean up after a crash). */
  readonly onWorkerStarted?: (pid: number) => void;
}

/** What happened in a run. */
export interface CronResult {
  /** Every worker's report on every tick, in the order they arrived. */
  readonly reports: readonly TickReport[];
  /** The reports that were published to the store, in publication order. */
  readonly published: readonly NightlyReport[];
  /** The key prefix of this run. */
  readonly namespace: string;
}

/** The last `count` days before `today`, oldest first, as `YYYY-MM-DD` (UTC). */
export function previousDays(count: number, today = new Date()): string[] {
  const dayMs = 24 * 60 * 60 * 1000;
  return Array.from({ length: count }, (_, index) => new Date(today.getTime() - (count - index) * dayMs).toISOString().slice(0, 10));
}

/**
 * Starts the worker processes, fires every tick at all of them at once (the late worker after the
 * others), prints what each did, and stops them.
 */
export async function runCron(options: CronOptions): Promise<CronResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const workerCount = Math.max(2, options.workers ?? 3);
  const ttlMs = options.ttlMs ?? 1_000;
  const jobMs = options.jobMs ?? 1_500;
  const namespace = `example:redis-cron:${randomUUID().slice(0, 8)}`;
  const names = Array.from({ length: workerCount }, (_, index) => `worker-${index + 1}`);
  const onTime = names.slice(0, -1);
  const late = names.at(-1) ?? '';
  const reportTimeoutMs = jobMs * workerCount + 30_000;
  const start = monotonicNow();
  const stamp = (): string => `${(monotonicNow() - start).toFixed(0).padStart(6)} ms`;
  const reports: TickReport[] = [];

  print(`${workerCount} worker processes, one Redis (${options.redisUrl}), keys under "${namespace}"`);
  print(`each report takes ${jobMs} ms; its lock has a ${ttlMs} ms TTL and is extended automatically while the job runs`);
  const pool = new WorkerPool(options.onWorkerStarted);
  const store = new Redis(options.redisUrl, { maxRetriesPerRequest: 2 });
  store.on('error', () => undefined);
  try {
    await Promise.all(
      names.map((name) => pool.start({ name, redisUrl: options.redisUrl, namespace, ttlMs, jobMs })),
    );
    print(`${stamp()}  all workers connected`);
    for (const tick of options.ticks) {
      print('');
      print(`tick ${tick.date}, key "report:${tick.date}", ${tick.mode === 'try' ? 'tryAcquire (skip if held)' : 'acquire (wait for the lock)'}: ${onTime.join(', ')} fire at once, ${late} late`);
      const collect = async (name: string, note: string): Promise<void> => {
        const report = await pool.nextReport(name, reportTimeoutMs);
        reports.push(report);
        print(`${stamp()}  ${name.padEnd(9)} ${note}${describe(report)}`);
      };
      for (const name of onTime) pool.send(name, { type: 'tick', ...tick });
      await Promise.all(onTime.map((name) => collect(name, '')));
      pool.send(late, { type: 'tick', ...tick });
      await collect(late, '(late) ');
    }
  } finally {
    await pool.close();
  }
  let published: NightlyReport[];
  try {
    published = await new ReportStore(store, namespace).published();
  } finally {
    store.disconnect();
  }
  print('');
  print(`${options.ticks.length} ticks -> ${published.length} reports published: ${published.map((report) => `${report.date} by ${report.worker}`).join(', ')}`);
  return { reports, published, namespace };
}

function describe(report: TickReport): string {
  switch (report.outcome) {
    case 'ran':
      return `RAN the report with fencing token ${report.fencingToken}; the lock was extended ${report.extensions} times while it ran`;
    case 'lost':
      return 'LOST the lock while the job ran (lock.signal aborted) and abandoned the job';
    case 'busy':
      return `skipped: tryAcquire returned undefined after ${report.waitedMs} ms (another worker holds the lock)`;
    case 'done-already':
      return report.tookLock === true
        ? `took the lock after ${report.waitedMs} ms, then skipped: already done by ${report.doneBy}`
        : `skipped: already done by ${report.doneBy} (the done marker, checked before locking)`;
  }
}
