/**
 * `pnpm --filter @fencelock/example-redlock-cron start`: a nightly report that must run on one
 * worker only, with Redlock over five independent Redis masters. Addresses: FENCELOCK_REDLOCK_URLS
 * (comma-separated; default redis://127.0.0.1:7001 … 7005, the masters `pnpm infra:up` starts).
 */
import { createRedlockLockProvider } from '@fencelock/redlock';
import { previousDays, runCron } from './run-cron.js';

const defaults = [7001, 7002, 7003, 7004, 7005].map((port) => `redis://127.0.0.1:${port}`).join(',');
const masters = (process.env.FENCELOCK_REDLOCK_URLS ?? defaults).split(',').map((url) => url.trim());

// One quick look first, so masters that are not running give a hint rather than a long wait.
const probe = createRedlockLockProvider({ masters, unreachableGraceMs: 0 });
const reachable = await Promise.race([
  probe.inspect('example:redlock-cron:probe').then(() => true, () => false),
  new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000).unref()),
]);
await probe.close();
if (!reachable) {
  console.error(`A majority of the Redis masters (${masters.join(', ')}) does not answer. Start the test servers with \`pnpm infra:up\` (or set FENCELOCK_REDLOCK_URLS).`);
  process.exit(1);
}

const [first = '', second = '', third = ''] = previousDays(3);
const result = await runCron({
  masters,
  ticks: [
    { date: first, mode: 'try' },
    { date: second, mode: 'try' },
    // The winner freezes between its last lock check and its write: the case Redlock cannot prevent.
    { date: third, mode: 'try', pauseWinner: true },
  ],
});
const dates = new Set(result.written.map((report) => report.date));
process.exitCode = result.written.length === 3 && dates.size === 3 ? 0 : 1;
