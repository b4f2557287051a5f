import { describeElectEndToEnd } from './support/elect-suite.js';
import { openSuiteRedis } from './support/redis-client.js';

// Single Redis: the leader holds the election's mutex key (`{…}fencelock:elect:<name>`); deleting it
// from outside is the loss an operator's DEL, an eviction or a failover causes. The key is found as an
// operator would find it, by SCAN (the suite's names are unique and have no glob characters).
describeElectEndToEnd('redis', async () => {
  const { env, client, close } = await openSuiteRedis();
  return {
    env,
    shortLifetime: ['--ttl', '1s'],
    removeLeader: async (name) => {
      const found: string[] = [];
      let cursor = '0';
      // Bounded: a test server holds far fewer keys than this many scan steps cover.
      for (let step = 0; step < 10_000; step += 1) {
        const [next, keys] = await client.scan(cursor, 'MATCH', `*fencelock:elect:${name}`, 'COUNT', 1_000);
        found.push(...keys);
        cursor = next;
        if (cursor === '0') break;
      }
      if (found.length !== 1) throw new Error(`expected one election key for ${name}, found ${found.length}`);
      await client.del(found[0]!);
    },
    close,
  };
});
