import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';

/** The shared test Redis, as the end-to-end suites reach it: the CLI's environment, and a client of the suite's own. */
export async function openSuiteRedis(): Promise<{ readonly env: Record<string, string>; readonly client: Redis; readonly close: () => Promise<void> }> {
  const { redisUrl } = topology();
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await client.connect();
  return {
    env: { FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: redisUrl },
    client,
    close: async () => {
      client.disconnect();
    },
  };
}
