/**
 * Acquire+release rate against etcd3's own `client.lock()`, and hand-off latency under contention.
 * Run against the shared cluster: `node --conditions=@fencelock/source --import tsx bench/lock-rate.ts`
 * (from packages/etcd, with `node test-infra/bin/infra.mjs up` done). Bounded: fixed round counts.
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { createEtcdLockProvider } from '../src/index.js';

const hosts = [...topology().etcdEndpoints];
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 300);
const HANDOFFS = Number(process.env['BENCH_HANDOFFS'] ?? 200);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function fencelockRate(): Promise<number> {
  const locks = createEtcdLockProvider({ connection: { hosts }, keyPrefix: 'fencelock-bench/' });
  const key = randomUUID();
  await (await locks.acquire(key)).release(); // opens the session
  const start = performance.now();
  for (let round = 0; round < ROUNDS; round += 1) await (await locks.acquire(key)).release();
  const rate = ROUNDS / ((performance.now() - start) / 1000);
  await locks.close();
  return rate;
}

async function etcd3LockRate(): Promise<number> {
  const client = new Etcd3({ hosts });
  const key = `fencelock-bench/etcd3/${randomUUID()}`;
  const start = performance.now();
  for (let round = 0; round < ROUNDS; round += 1) {
    const lock = client.lock(key).ttl(10);
    await lock.acquire();
    await lock.release();
  }
  const rate = ROUNDS / ((performance.now() - start) / 1000);
  client.close();
  return rate;
}

/**
 * Two providers ping-pong one key; latency from the holder's release() call to the waiter's grant.
 * With `settleMs` > 0 the holder waits that long after the waiter queued, so the waiter's watch is in
 * place (steady state); with 0 the release races the waiter's watch creation.
 */
async function handoffLatency(settleMs: number): Promise<number[]> {
  const [a, b] = [0, 1].map(() => createEtcdLockProvider({ connection: { hosts }, keyPrefix: 'fencelock-bench/' }));
  if (a === undefined || b === undefined) throw new Error('unreachable');
  const key = randomUUID();
  const samples: number[] = [];
  let holder = await a.acquire(key);
  let [current, other] = [a, b];
  for (let round = 0; round < HANDOFFS; round += 1) {
    const queued = new Promise<void>((resolve) => {
      const off = other.on('contended', () => {
        off();
        resolve();
      });
    });
    const waiting = other.acquire(key, { waitMs: 10_000 });
    await queued;
    if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
    const released = performance.now();
    void holder.release();
    holder = await waiting;
    samples.push(performance.now() - released);
    [current, other] = [other, current];
  }
  await holder.release();
  await Promise.all([a.close(), b.close()]);
  return samples.sort((x, y) => x - y);
}

const ours = await fencelockRate();
const theirs = await etcd3LockRate();
console.log(`acquire+release, one client, ${ROUNDS} rounds: fencelock ${ours.toFixed(0)}/s, etcd3 client.lock() ${theirs.toFixed(0)}/s (ratio ${(ours / theirs).toFixed(2)})`);
for (const settleMs of [30, 0]) {
  const handoffs = await handoffLatency(settleMs);
  console.log(
    `hand-off latency (${settleMs === 0 ? 'release races the watch' : 'waiter already watching'}), ${HANDOFFS} hand-offs: p50 ${percentile(handoffs, 50).toFixed(1)} ms, p90 ${percentile(handoffs, 90).toFixed(1)} ms, p99 ${percentile(handoffs, 99).toFixed(1)} ms`,
  );
}
