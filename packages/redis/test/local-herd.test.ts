import { startRedisServer, type RedisServer } from '@fencelock/test-infra';
import { nextEvent, within } from '@fencelock/conformance';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptCallsOn } from './helpers.js';
import { createRedisLockProvider } from '../src/index.js';

// A dedicated server, so that its command counters count this test's requests only.
let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer({ persistence: false });
});
afterAll(async () => {
  await server?.stop();
});

const scriptCalls = (): Promise<number> => scriptCallsOn(server.port);

describe('many waiters of one key in one process', () => {
  it('a release wakes one of them, not all: attempts per hand-off stay flat', async () => {
    // Polling so slow that only notifications can wake a waiter within the test.
    const retry = { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 1 };
    const holderSide = createRedisLockProvider({ connection: server.url });
    const waiterSide = createRedisLockProvider({ connection: server.url, retry });
    try {
      const key = `herd:${randomUUID()}`;
      const waiters = 30;
      const holder = await holderSide.acquire(key);
      let contended = 0;
      const allWaiting = new Promise<void>((resolve) =>
        waiterSide.on('contended', () => {
          contended += 1;
          if (contended === waiters) resolve();
        }),
      );
      const granted: string[] = [];
      const waiting = Array.from({ length: waiters }, () =>
        waiterSide.acquire(key, { waitMs: 60_000 }).then(async (lock) => {
          granted.push(lock.ownerId);
          await lock.release();
        }),
      );
      await within(allWaiting, 10_000, 'every waiter to find the key held');
      // Each waiter's first attempt has run; count from here.
      const before = await scriptCalls();
      const firstHandOff = nextEvent(waiterSide, 'acquired', () => true, 10_000);
      await holder.release();
      await firstHandOff;
      await within(Promise.all(waiting), 30_000, 'every waiter, one release after another');
      const calls = (await scriptCalls()) - before;
      expect(granted).toHaveLength(waiters);
      // 1 release by the holder, and per waiter: its successful attempt and its release. Waking every
      // local waiter at each release would add about waiters²/2 = 450 failed attempts.
      expect(calls).toBeLessThanOrEqual(1 + 2 * waiters + waiters);
    } finally {
      await Promise.allSettled([holderSide.close(), waiterSide.close()]);
    }
  });
});
