/**
 * `pnpm --filter @fencelock/example-semaphore-rate-limit start`: worker processes share a partner
 * API that allows 2 calls in flight; a counting semaphore on Redis keeps them under it. Redis
 * address: FENCELOCK_REDIS_URL (default redis://127.0.0.1:6379, the server `pnpm infra:up` starts).
 */
import { Redis } from 'ioredis';
import { runRateLimited } from './run-rate-limited.js';

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

const result = await runRateLimited({ redisUrl });
process.exitCode = result.api.refused === 0 && result.api.maxInFlight <= result.cap ? 0 : 1;
