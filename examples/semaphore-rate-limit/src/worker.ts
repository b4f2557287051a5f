/**
 * One worker process: it connects to Redis, waits for `go`, makes its API calls one after the other,
 * each under a permit of the shared semaphore, reports, and exits. Run by `runRateLimited` with
 * `fork`, never by hand.
 */
import { createRedisLockProvider } from '@fencelock/redis';
import { callUnderPermit } from './call-api.js';
import type { CoordinatorMessage, WorkerConfig, WorkerMessage, WorkerReport } from './protocol.js';

// A worker never outlives its coordinator: it exits when the IPC channel closes, and after this bound.
const MAX_LIFETIME_MS = 5 * 60_000;
setTimeout(() => process.exit(3), MAX_LIFETIME_MS).unref();
process.on('disconnect', () => process.exit(2));

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
const send = (message: WorkerMessage): Promise<void> =>
  new Promise((resolve) => {
    if (process.send === undefined) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });

const locks = createRedisLockProvider({ connection: config.redisUrl, keyPrefix: config.keyPrefix });

async function work(): Promise<WorkerReport> {
  const report = { name: config.name, ok: 0, refused: 0, waited: 0, tokens: [] as string[] };
  for (let index = 0; index < config.calls; index += 1) {
    const outcome = await callUnderPermit(locks, config.apiUrl, config.cap);
    if (outcome.status === 200) report.ok += 1;
    else report.refused += 1;
    if (outcome.waited) report.waited += 1;
    report.tokens.push(String(outcome.token ?? ''));
  }
  return report;
}

process.once('message', (message: CoordinatorMessage) => {
  if (message.type !== 'go') return;
  work()
    .then(
      (report) => send({ type: 'done', report }),
      (error: unknown) => send({ type: 'failed', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }),
    )
    .finally(async () => {
      await locks.close();
      process.disconnect();
    });
});

// One read first: connected (or failed) before the coordinator says go.
await locks.inspectSemaphore('ready-check');
await send({ type: 'ready' });
