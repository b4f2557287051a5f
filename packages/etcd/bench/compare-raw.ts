/**
 * Uncontended acquire + release: @fencelock/etcd against a raw etcd transaction pair (create-if-absent
 * put, compare-and-delete) and against the etcd3 package's `client.lock()`, in alternating rounds in
 * one process so that noise on a shared machine hits all alike. Counts the etcd RPCs each cycle sends
 * and the client CPU per cycle. A measurement, not a test:
 *   node --conditions=@fencelock/source --import tsx bench/compare-raw.ts [cyclesPerRound] [rounds]
 * (from packages/etcd, with `node test-infra/bin/infra.mjs up` done). Bounded: fixed counts.
 * `BASELINE_SRC=<dir>` adds another copy of this package's `src` (e.g. an older one) as a fourth
 * subject, to compare two versions side by side.
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import { Etcd3, KVClient, LeaseClient, WatchClient } from 'etcd3';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as current from '../src/index.js';

const baselineDir = process.env['BASELINE_SRC'];
const baseline = baselineDir === undefined ? undefined : ((await import(pathToFileURL(resolve(baselineDir, 'index.ts')).href)) as typeof current);

const CYCLES = Number(process.argv[2] ?? 100);
const ROUNDS = Number(process.argv[3] ?? 6);
const hosts = process.env['ETCD_HOSTS']?.split(',') ?? [...topology().etcdEndpoints];

// Counts every KV, lease and watch RPC made by any client (etcd3's lock() makes its own RPC clients);
// the subjects run one at a time, so the counts are attributed by taking them before and after.
const rpcCounts = new Map<string, number>();
for (const [service, rpcClass] of Object.entries({ kv: KVClient, lease: LeaseClient, watch: WatchClient })) {
  const prototype = rpcClass.prototype as unknown as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const method = prototype[name];
    if (name === 'constructor' || typeof method !== 'function') continue;
    prototype[name] = function (this: unknown, ...args: unknown[]) {
      rpcCounts.set(`${service}.${name}`, (rpcCounts.get(`${service}.${name}`) ?? 0) + 1);
      return (method as (...a: unknown[]) => unknown).apply(this, args);
    };
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const oursClient = new Etcd3({ hosts });
const rawClient = new Etcd3({ hosts });
const etcd3Client = new Etcd3({ hosts });
const locks = current.createEtcdLockProvider({ client: oursClient, keyPrefix: 'fencelock-compare/', sessionTtlMs: 10_000 });
const baselineClient = new Etcd3({ hosts });
const baselineLocks = baseline?.createEtcdLockProvider({ client: baselineClient, keyPrefix: 'fencelock-compare/', sessionTtlMs: 10_000 });
const key = randomUUID();
const rawKey = `fencelock-compare-raw/${randomUUID()}`;
const etcd3Key = `fencelock-compare-etcd3/${randomUUID()}`;

const runs = {
  ours: async (): Promise<void> => {
    await (await locks.acquire(key)).release();
  },
  baseline: async (): Promise<void> => {
    await (await baselineLocks?.acquire(`${key}-baseline`))?.release();
  },
  raw: async (): Promise<void> => {
    const owner = randomUUID();
    const taken = await rawClient.if(rawKey, 'Create', '==', 0).then(rawClient.put(rawKey).value(owner)).commit();
    if (!taken.succeeded) throw new Error('raw lock held');
    await rawClient.if(rawKey, 'Value', '==', owner).then(rawClient.delete().key(rawKey)).commit();
  },
  etcd3: async (): Promise<void> => {
    const lock = etcd3Client.lock(etcd3Key).ttl(10);
    await lock.acquire();
    await lock.release();
  },
} as const;
type Which = keyof typeof runs;
const names: Which[] = baselineLocks === undefined ? ['ours', 'raw', 'etcd3'] : ['ours', 'raw', 'etcd3', 'baseline'];

for (let i = 0; i < 20; i += 1) for (const name of names) await runs[name]();
const counters: Record<Which, Map<string, number>> = { ours: new Map(), raw: new Map(), etcd3: new Map(), baseline: new Map() };

const rates: Record<Which, number[]> = { ours: [], raw: [], etcd3: [], baseline: [] };
const cpu: Record<Which, number> = { ours: 0, raw: 0, etcd3: 0, baseline: 0 };
for (let round = 0; round < ROUNDS; round += 1) {
  // Rotate the order, so none always runs right after another.
  const order = names.map((_, i) => names[(i + round) % names.length] as Which);
  for (const which of order) {
    const countsBefore = new Map(rpcCounts);
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    for (let i = 0; i < CYCLES; i += 1) await runs[which]();
    const used = process.cpuUsage(cpuStart);
    for (const [name, count] of rpcCounts) {
      const delta = count - (countsBefore.get(name) ?? 0);
      if (delta > 0) counters[which].set(name, (counters[which].get(name) ?? 0) + delta);
    }
    cpu[which] += used.user + used.system;
    rates[which].push(CYCLES / ((performance.now() - start) / 1000));
  }
}
const cycles = CYCLES * ROUNDS;
for (const which of names) {
  const rpcs = [...counters[which]].map(([name, count]) => `${name} ${(count / cycles).toFixed(2)}`).join(', ');
  console.log(`${which.padEnd(5)} ${rates[which].map((r) => r.toFixed(0)).join(' ')} /s (median ${median(rates[which]).toFixed(0)}); CPU ${(cpu[which] / cycles).toFixed(0)} µs/cycle; RPCs per cycle: ${rpcs}`);
}
const ratio = (a: Which, b: Which): string => {
  const perRound = rates[a].map((rate, i) => rate / (rates[b][i] ?? Number.NaN));
  return `${perRound.map((r) => r.toFixed(2)).join(' ')} (median ${median(perRound).toFixed(2)})`;
};
console.log(`ours / raw   per round: ${ratio('ours', 'raw')}`);
console.log(`ours / etcd3 per round: ${ratio('ours', 'etcd3')}`);
if (baselineLocks !== undefined) {
  console.log(`baseline / raw   per round: ${ratio('baseline', 'raw')}`);
  console.log(`baseline / etcd3 per round: ${ratio('baseline', 'etcd3')}`);
}

await locks.close();
await baselineLocks?.close();
baselineClient.close();
oursClient.close();
rawClient.close();
etcd3Client.close();
