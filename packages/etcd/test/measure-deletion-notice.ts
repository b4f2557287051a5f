// How soon a holder notices its key deleted behind its back (a measurement, not a test): a raw
// client deletes the holder's key, and the time from sending that delete to the abort of the
// handle's signal is taken, `runs` times, on the shared cluster. Twice: for a lock held a while
// (its watch in place, as in use), and for a key deleted the moment the acquire returns (the watch
// opens 25 ms after the grant and replays from the key's creation).
//   node --conditions=@fencelock/source --import tsx test/measure-deletion-notice.ts [runs]
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { monotonicNow } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { createEtcdLockProvider } from '../src/index.js';

const runs = Number(process.argv[2] ?? 20);
// A bound on each wait, far above the notice.
const BOUND_MS = 3_000;
// "Held a while": well past the watch's opening delay.
const HELD_MS = 200;
const hosts = [...topology().etcdEndpoints];
const client = new Etcd3({ hosts });
const raw = new Etcd3({ hosts });
const provider = createEtcdLockProvider({ client, keyPrefix: 'fencelock-measure-deletion/' });

async function measure(heldMs: number): Promise<string> {
  const latencies: number[] = [];
  let missed = 0;
  for (let run = 0; run < runs; run += 1) {
    const lock = await provider.acquire(randomUUID());
    if (heldMs > 0) await delay(heldMs);
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
    await raw.delete().key(provider.ownership(lock).etcdKey).exec();
    await aborted;
    if (abortedAt === undefined) missed += 1;
    else latencies.push(abortedAt - sent);
    await lock.release();
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return `${runs} deletes: ${missed} not noticed within ${BOUND_MS} ms; delete sent → signal aborted: median ${median?.toFixed(1) ?? 'n/a'} ms, max ${sorted.at(-1)?.toFixed(1) ?? 'n/a'} ms`;
}

// The lease is granted and the streams are opened once, before anything is timed.
await (await provider.acquire(randomUUID())).release();
console.log(`held ${HELD_MS} ms: ${await measure(HELD_MS)}`);
console.log(`deleted at once: ${await measure(0)}`);
await provider.close();
client.close();
raw.close();
