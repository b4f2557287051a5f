// How soon a holder notices its znode deleted behind its back (a measurement, not a test): a raw
// client deletes the holder's node, and the time from sending that delete to the abort of the
// handle's signal is taken, `runs` times, on the shared ensemble.
//   node --conditions=@fencelock/source --import tsx test/measure-deletion-notice.ts [runs]
import { randomUUID } from 'node:crypto';
import { monotonicNow } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { holdersOf, sortedContenders } from '../src/contender-names.js';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { childrenOf, rawClient, syncWithLeader } from './znodes.js';

const runs = Number(process.argv[2] ?? 20);
// A bound on each wait, far above the notice.
const BOUND_MS = 3_000;
const ROOT = '/fencelock-measure-deletion';
const { zkConnectionString } = topology();
const raw = await rawClient(zkConnectionString);
const provider = createZooKeeperLockProvider({ connectionString: zkConnectionString, sessionTimeoutMs: 10_000, root: ROOT });
const latencies: number[] = [];
let missed = 0;
for (let run = 0; run < runs; run += 1) {
  const key = `deleted:${randomUUID()}`;
  // One acquisition first: the measured one then finds its lock znode known, the usual path.
  await (await provider.acquire(key)).release();
  const lock = await provider.acquire(key);
  const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
  await syncWithLeader(raw);
  const holder = holdersOf(sortedContenders(await childrenOf(raw, lockPath)))[0];
  if (holder === undefined) throw new Error(`no holder under ${lockPath}`);
  let abortedAt: number | undefined;
  const aborted = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, BOUND_MS);
    lock.signal.addEventListener('abort', () => {
      abortedAt = monotonicNow();
      clearTimeout(timer);
      resolve();
    });
  });
  const sent = monotonicNow();
  await new Promise<void>((resolve, reject) => raw.remove(`${lockPath}/${holder.name}`, -1, (error) => (error ? reject(error) : resolve())));
  await aborted;
  if (abortedAt === undefined) missed += 1;
  else latencies.push(abortedAt - sent);
  await lock.release();
}
await provider.close();
raw.close();
const sorted = [...latencies].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)];
console.log(
  `${runs} deletes: ${missed} not noticed within ${BOUND_MS} ms; delete sent → signal aborted: median ${median?.toFixed(1) ?? 'n/a'} ms, max ${sorted.at(-1)?.toFixed(1) ?? 'n/a'} ms`,
);
