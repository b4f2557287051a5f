/**
 * `pnpm --filter @fencelock/example-redis-cron start`: a nightly report that must run on one worker
 * only, fired at several worker processes at once. Redis address: FENCELOCK_REDIS_URL
 * (default redis://127.0.0.1:6379, the server `pnpm infra:up` starts).
 */
import { Redis } from 'ioredis';
import { previousDays, runCron } from './run-cron.js';

const redisUrl = process.env.FENCELOCK_REDIS_URL ?? 'redis://127.0.0.1:6379';

// One quick look first, so a server that is not running gives a hint rather than a long wait.
const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
probe.on('error', () => undefined);
const reachable = await probe.connect().then(() => probe.ping()).then(() => true, () => false);
probe.disconnect();
if (!reachable) {
  console.error(`Redis at ${redisUrl} does not answer. Start the test servers with \`pnpm infra:up\` (or set FENCELOCK_REDIS_URL).`);
  process.exit(1);
}

// Two ticks where the losers skip at once, one where they wait for the lock.
const [first = '', second = '', third = ''] = previousDays(3);
const result = await runCron({
  redisUrl,
  ticks: [
    { date: first, mode: 'try' },
    { date: second, mode: 'try' },
    { date: third, mode: 'wait' },
  ],
});
const dates = new Set(result.published.map((report) => report.date));
process.exitCode = result.published.length === 3 && dates.size === 3 ? 0 : 1;
