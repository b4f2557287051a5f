import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { monotonicNow } from '@fencelock/core';
import type { LockMode, TickReport } from './protocol.js';
import { ReportFiles, type NightlyReport } from './report-files.js';
import { WorkerPool } from './worker-pool.js';

/** One firing of the schedule: the date whose report is due, and how workers take its lock. */
export interface CronTick {
  readonly date: string;
  readonly mode: LockMode;
  /**
   * The worker that builds this report is stopped (SIGSTOP) between its last lock check and its
   * write, until its lock has expired and the late worker has built the report too: the case Redlock
   * cannot prevent, caught by the idempotency record.
   */
  readonly pauseWinner?: boolean;
}

/** Options of {@link runCron}. */
export interface CronOptions {
  /** `redis://` URLs of the independent Redis masters. */
  readonly masters: readonly string[];
  readonly ticks: readonly CronTick[];
  /** Worker processes; the last one's clock runs late, so it fires after the others. @default 3 */
  readonly workers?: number;
  /** Lock TTL, in ms. @default 1_000 */
  readonly ttlMs?: number;
  /** How long one report takes to build, in ms (longer than the TTL, to show automatic extension). @default 1_500 */
  readonly jobMs?: number;
  /** Where the timeline goes. @default console.log */
  readonly print?: (line: string) => void;
  /** Called with each worker's process id as soon as it is forked (to clean up after a crash). */
  readonly onWorkerStarted?: (pid: number) => void;
  /** Called before each tick (index from 0); a test stops a master here. */
  readonly beforeTick?: (index: number) => Promise<void> | void;
}

/** What happened in a run. */
export interface CronResult {
  /** Every worker's report on every tick, in the order they arrived. */
  readonly reports: readonly TickReport[];
  /** The reports that were written, one per date at most (read back from the files). */
  readonly written: readonly NightlyReport[];
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
  const namespace = `example:redlock-cron:${randomUUID().slice(0, 8)}`;
  const names = Array.from({ length: workerCount }, (_, index) => `worker-${index + 1}`);
  const onTime = names.slice(0, -1);
  const late = names.at(-1) ?? '';
  const reportTimeoutMs = jobMs * workerCount + ttlMs * 4 + 30_000;
  const start = monotonicNow();
  const stamp = (): string => `${(monotonicNow() - start).toFixed(0).padStart(6)} ms`;
  const reports: TickReport[] = [];
  const reportsDir = await mkdtemp(join(tmpdir(), 'fencelock-redlock-cron-'));
  const files = new ReportFiles(reportsDir);

  print(`${workerCount} worker processes, Redlock over ${options.masters.length} Redis masters, reports in ${reportsDir}`);
  print(`each report takes ${jobMs} ms; its lock has a ${ttlMs} ms TTL and is extended automatically while the job runs`);
  print('Redlock gives NO fencing token: the report file is the idempotency record that keeps a second copy out');
  const pool = new WorkerPool(options.onWorkerStarted);
  const written: NightlyReport[] = [];
  try {
    await Promise.all(
      names.map((name) => pool.start({ name, masters: options.masters, namespace, reportsDir, ttlMs, jobMs })),
    );
    print(`${stamp()}  all workers connected`);
    for (const [index, tick] of options.ticks.entries()) {
      await options.beforeTick?.(index);
      print('');
      print(`tick ${tick.date}, key "report:${tick.date}", ${tick.mode === 'try' ? 'tryAcquire (skip if held)' : 'acquire (wait for the lock)'}: ${onTime.join(', ')} fire at once, ${late} late`);
      const collect = async (name: string, note = ''): Promise<TickReport> => {
        const report = await pool.nextReport(name, reportTimeoutMs);
        reports.push(report);
        print(`${stamp()}  ${name.padEnd(9)} ${note}${describe(report)}`);
        return report;
      };
      for (const name of onTime) pool.send(name, { type: 'tick', date: tick.date, mode: tick.mode, pauseBeforeWrite: tick.pauseWinner === true });
      if (tick.pauseWinner !== true) {
        await Promise.all(onTime.map((name) => collect(name)));
        pool.send(late, { type: 'tick', date: tick.date, mode: tick.mode });
        await collect(late, '(late) ');
        continue;
      }
      // The winner stops itself right after its last lock check; its lock expires on the masters.
      const onTimeReports = Promise.all(onTime.map((name) => collect(name)));
      onTimeReports.catch(() => undefined); // awaited below; not unhandled if we fail before that
      const paused = await pool.nextPause(reportTimeoutMs);
      print(`${stamp()}  ${paused.padEnd(9)} built the report, checked its lock, then FROZE before writing (a GC pause, a stopped VM)`);
      // The late worker waits for the lock, which the frozen worker can no longer extend.
      pool.send(late, { type: 'tick', date: tick.date, mode: 'wait' });
      await collect(late, '(late) ');
      print(`${stamp()}  ${paused.padEnd(9)} resumes, and sends the write it had prepared`);
      pool.resume(paused);
      await onTimeReports;
    }
    for (const tick of options.ticks) {
      const report = await files.read(tick.date);
      if (report !== undefined) written.push(report);
    }
  } finally {
    await pool.close();
    await rm(reportsDir, { recursive: true, force: true });
  }
  print('');
  print(`${options.ticks.length} ticks -> ${written.length} reports written: ${written.map((report) => `${report.date} by ${report.worker}`).join(', ')}`);
  const refused = reports.filter((report) => report.outcome === 'duplicate-refused').length;
  if (refused > 0) print(`${refused} duplicate write(s) refused by the idempotency record; the lock alone could not have stopped them`);
  return { reports, written };
}

function describe(report: TickReport): string {
  switch (report.outcome) {
    case 'ran':
      return `${report.mode === 'wait' ? `took the lock after ${report.waitedMs} ms, ` : ''}RAN the report and wrote it (no fencing token with Redlock); the lock was extended ${report.extensions} times while it ran`;
    case 'lost':
      return 'LOST the lock while the job ran (lock.signal aborted) and abandoned the job';
    case 'busy':
      return `skipped: tryAcquire returned undefined after ${report.waitedMs} ms (another worker holds the lock)`;
    case 'done-already':
      return report.tookLock === true
        ? `took the lock after ${report.waitedMs} ms, then skipped: the report was already written by ${report.writtenBy}`
        : `skipped: the report was already written by ${report.writtenBy}`;
    case 'duplicate-refused':
      return `its write was REFUSED by the idempotency record (already written by ${report.writtenBy})${report.heldAtWrite === false ? '; its lock had expired during the pause, but the write was already on its way' : ''}`;
  }
}
