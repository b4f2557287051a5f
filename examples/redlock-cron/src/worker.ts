/**
 * One worker process: it connects to the Redis masters, then handles every tick the scheduler
 * sends it until told to stop. Run by {@link WorkerPool} with `fork`, never by hand.
 */
import { createRedlockLockProvider } from '@fencelock/redlock';
import type { SchedulerMessage, WorkerConfig, WorkerMessage } from './protocol.js';
import { ReportFiles } from './report-files.js';
import { runTick } from './run-tick.js';

// A worker never outlives its scheduler: it exits when the IPC channel closes, and after this bound.
const MAX_LIFETIME_MS = 5 * 60_000;
let stopping = false;
setTimeout(() => process.exit(3), MAX_LIFETIME_MS).unref();
process.on('disconnect', () => process.exit(stopping ? 0 : 2));

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
const send = (message: WorkerMessage): Promise<void> =>
  new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });

// The provider opens one ioredis client per master and closes them in close().
const locks = createRedlockLockProvider({ masters: [...config.masters] });
const reports = new ReportFiles(config.reportsDir);

let queue = Promise.resolve();
process.on('message', (message: SchedulerMessage) => {
  if (message.type === 'stop') {
    stopping = true;
    queue = queue.then(async () => {
      await locks.close();
      process.disconnect();
    });
    return;
  }
  const beforeWrite = message.pauseBeforeWrite
    ? async () => {
        // The scheduler must know before we stop; it resumes us (SIGCONT) when it wants.
        await send({ type: 'pausing', date: message.date });
        process.kill(process.pid, 'SIGSTOP');
      }
    : undefined;
  const context = { worker: config.name, locks, reports, namespace: config.namespace, ttlMs: config.ttlMs, jobMs: config.jobMs, beforeWrite };
  // Ticks are handled one at a time, in the order they came.
  queue = queue.then(async () => {
    try {
      await send({ type: 'report', report: await runTick(context, message.date, message.mode) });
    } catch (error) {
      await send({ type: 'failed', date: message.date, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
  });
});

// Ready once a majority of masters answers: acquire needs nothing more.
await locks.inspect(`${config.namespace}:probe`);
await send({ type: 'ready' });
