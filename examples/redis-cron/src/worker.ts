/**
 * One worker process: it connects to Redis, then handles every tick the scheduler sends it until
 * told to stop. Run by {@link WorkerPool} with `fork`, never by hand.
 */
import { createRedisLockProvider } from '@fencelock/redis';
import { Redis } from 'ioredis';
import type { SchedulerMessage, WorkerConfig, WorkerMessage } from './protocol.js';
import { ReportStore } from './report-store.js';
import { runTick } from './run-tick.js';

// A worker never outlives its scheduler: it exits when the IPC channel closes, and after this bound.
const MAX_LIFETIME_MS = 5 * 60_000;
let stopping = false;
setTimeout(() => process.exit(3), MAX_LIFETIME_MS).unref();
process.on('disconnect', () => process.exit(stopping ? 0 : 2));

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
const send = (message: WorkerMessage): void => {
  process.send?.(message);
};

// One connection for the app's own data; the lock provider uses it too (and opens one more for
// release notifications). A provider handed a client never closes it: we do, at the end.
const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2 });
redis.on('error', () => undefined); // ioredis reconnects by itself; failed requests reject.
const locks = createRedisLockProvider({ client: redis });
const store = new ReportStore(redis, config.namespace);
const context = { worker: config.name, locks, store, namespace: config.namespace, ttlMs: config.ttlMs, jobMs: config.jobMs };

let queue = Promise.resolve();
process.on('message', (message: SchedulerMessage) => {
  if (message.type === 'stop') {
    stopping = true;
    queue = queue.then(async () => {
      await locks.close();
      redis.disconnect();
      process.disconnect();
    });
    return;
  }
  // Ticks are handled one at a time, in the order they came.
  queue = queue.then(async () => {
    try {
      send({ type: 'report', report: await runTick(context, message.date, message.mode) });
    } catch (error) {
      send({ type: 'failed', date: message.date, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
  });
});

await redis.ping();
send({ type: 'ready' });
