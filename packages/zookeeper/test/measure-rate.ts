// Acquire+release rate of one provider on the shared ensemble (a measurement, not a test):
//   node --conditions=@fencelock/source --import tsx test/measure-rate.ts [rounds]
import { randomUUID } from 'node:crypto';
import { monotonicNow } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { createZooKeeperLockProvider } from '../src/index.js';

const rounds = Number(process.argv[2] ?? 300);
const keys: string[] = [];
for (const removeEmptyParents of [true, false]) {
  const provider = createZooKeeperLockProvider({
    connectionString: topology().zkConnectionString,
    sessionTimeoutMs: 10_000,
    root: '/fencelock-rate',
    removeEmptyParents,
  });
  const key = `rate:${randomUUID()}`;
  keys.push(key);
  await (await provider.acquire(key)).release(); // connect and warm up
  const start = monotonicNow();
  for (let round = 0; round < rounds; round += 1) {
    const lock = await provider.acquire(key);
    await lock.release();
  }
  const seconds = (monotonicNow() - start) / 1_000;
  console.log(`removeEmptyParents=${removeEmptyParents}: ${rounds} acquire+release in ${seconds.toFixed(2)} s = ${(rounds / seconds).toFixed(0)}/s`);
  await provider.close();
}
// The run without parent removal left its lock znode: remove it the way a provider does.
const cleaner = createZooKeeperLockProvider({ connectionString: topology().zkConnectionString, root: '/fencelock-rate' });
for (const key of keys) await (await cleaner.acquire(key)).release();
await cleaner.close();
