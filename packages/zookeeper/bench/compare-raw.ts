/**
 * Uncontended acquire + release: @fencelock/zookeeper against the raw ephemeral-sequential recipe on
 * node-zookeeper-client (create, getChildren, delete), in alternating rounds in one process so that
 * noise on a shared machine hits both alike. Both talk to the SAME server (a follower adds a hop to
 * every write), once per server. Also counts the requests and socket writes each cycle makes, and
 * the client CPU per cycle. A measurement, not a test:
 *   node --conditions=@fencelock/source --import tsx bench/compare-raw.ts [cyclesPerRound] [rounds]
 * (from packages/zookeeper, with `node test-infra/bin/infra.mjs up` done). Bounded: fixed counts.
 * `ZK_HOSTS=host:port,…` picks the servers; `BASELINE_SRC=<dir>` adds another copy of this package's
 * `src` (e.g. an older one) as a third subject, to compare two versions side by side; `PARALLEL=64`
 * runs that many loops at once per subject, each on its own key (the bench's 64-key scenario).
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { topology } from '@fencelock/test-infra';
import { CreateMode, type Client, type Exception, createClient } from 'node-zookeeper-client';
import * as current from '../src/index.js';

const CYCLES = Number(process.argv[2] ?? 200);
const ROUNDS = Number(process.argv[3] ?? 6);
const ROOT = '/fencelock-compare';
const PARALLEL = Number(process.env['PARALLEL'] ?? 1);
const baselineDir = process.env['BASELINE_SRC'];
const baseline = baselineDir === undefined ? undefined : ((await import(pathToFileURL(resolve(baselineDir, 'index.ts')).href)) as typeof current);

// Count every request a client queues, by opcode name, per client.
const require = createRequire(import.meta.url);
const clientDir = require.resolve('node-zookeeper-client').replace(/index\.js$/, '');
const { OP_CODES } = require(`${clientDir}lib/jute/index.js`) as { OP_CODES: Record<string, number> };
const opName = new Map(Object.entries(OP_CODES).map(([name, code]) => [code, name]));
const ConnectionManager = require(`${clientDir}lib/ConnectionManager.js`) as { prototype: { queue(request: unknown, callback: unknown): void } };
const counts = new WeakMap<object, Map<string, number>>();
const originalQueue = ConnectionManager.prototype.queue;
ConnectionManager.prototype.queue = function (this: object, request: unknown, callback: unknown) {
  const type = (request as { header?: { type?: number } }).header?.type;
  const name = opName.get(type ?? -999) ?? String(type);
  let map = counts.get(this);
  if (map === undefined) counts.set(this, (map = new Map()));
  map.set(name, (map.get(name) ?? 0) + 1);
  originalQueue.call(this, request, callback);
};
// Socket writes that reach the kernel: a corked batch flushes as one.
const flushes = new WeakMap<object, number>();
for (const method of ['_write', '_writev'] as const) {
  const original = Socket.prototype[method] as (...args: unknown[]) => unknown;
  (Socket.prototype as unknown as Record<string, unknown>)[method] = function (this: Socket, ...args: unknown[]) {
    flushes.set(this, (flushes.get(this) ?? 0) + 1);
    return original.apply(this, args);
  };
}
const managerOf = (client: Client): { socket?: object } => (client as unknown as { connectionManager: { socket?: object } }).connectionManager;
function tally(client: Client): Map<string, number> {
  const tallied = new Map(counts.get(managerOf(client)) ?? []);
  const socket = managerOf(client).socket;
  tallied.set('socket writes', socket === undefined ? 0 : (flushes.get(socket) ?? 0));
  return tallied;
}
function perCycle(now: Map<string, number>, before: Map<string, number>, cycles: number): string {
  const parts: string[] = [];
  for (const [name, count] of now) {
    const delta = count - (before.get(name) ?? 0);
    if (delta > 0) parts.push(`${name} ${(delta / cycles).toFixed(2)}`);
  }
  return parts.join(', ');
}

function call<T>(start: (done: (error: Error | Exception | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));
}

async function connected(host: string): Promise<Client> {
  const client = createClient(host, { sessionTimeout: 10_000, retries: 0 });
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no connection to ${host}`)), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  client.connect();
  await ready;
  return client;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Subject {
  readonly name: string;
  readonly client: Client;
  /** One acquire + release of the `lane`th key. */
  cycle(lane: number): Promise<void>;
  close(): Promise<void>;
}

async function fencelockSubject(name: string, host: string, module: typeof current): Promise<Subject> {
  const client = await connected(host);
  const locks = module.createZooKeeperLockProvider({ client, root: ROOT });
  const key = `compare:${randomUUID()}`;
  return {
    name,
    client,
    async cycle(lane) {
      await (await locks.acquire(`${key}:${lane}`)).release();
    },
    async close() {
      await locks.close();
      client.close();
    },
  };
}

async function rawSubject(host: string): Promise<Subject> {
  const client = await connected(host);
  const root = `${ROOT}-raw/${randomUUID()}`;
  for (let lane = 0; lane < PARALLEL; lane += 1) await call<string>((done) => client.mkdirp(`${root}/${lane}`, done));
  return {
    name: 'raw',
    client,
    async cycle(lane) {
      const parent = `${root}/${lane}`;
      const path = await call<string>((done) => client.create(`${parent}/lock-`, Buffer.alloc(0), CreateMode.EPHEMERAL_SEQUENTIAL, done));
      const children = (await call<string[]>((done) => client.getChildren(parent, done))).sort();
      if (`${parent}/${children[0] ?? ''}` !== path) throw new Error('raw lock held');
      await call<null>((done) => client.remove(path, -1, (error) => done(error, null)));
    },
    async close() {
      for (let lane = 0; lane < PARALLEL; lane += 1) {
        await call<null>((done) => client.remove(`${root}/${lane}`, -1, (error) => done(error, null))).catch(() => undefined);
      }
      await call<null>((done) => client.remove(root, -1, (error) => done(error, null))).catch(() => undefined);
      client.close();
    },
  };
}

async function compareOn(host: string): Promise<void> {
  const subjects: Subject[] = [await fencelockSubject('ours', host, current), await rawSubject(host)];
  if (baseline !== undefined) subjects.push(await fencelockSubject('baseline', host, baseline));
  for (let i = 0; i < 30; i += 1) for (const subject of subjects) await Promise.all(Array.from({ length: PARALLEL }, (_, lane) => subject.cycle(lane)));

  const rates = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
  const latencies = new Map<string, number[]>(subjects.map((s) => [s.name, []]));
  const cpu = new Map<string, number>(subjects.map((s) => [s.name, 0]));
  const before = new Map(subjects.map((s) => [s.name, tally(s.client)]));
  for (let round = 0; round < ROUNDS; round += 1) {
    // Rotate the order, so that none always runs right after another.
    for (let i = 0; i < subjects.length; i += 1) {
      const subject = subjects[(i + round) % subjects.length] as Subject;
      const samples = latencies.get(subject.name) ?? [];
      const start = performance.now();
      const cpuStart = process.cpuUsage();
      // CYCLES in all per round, spread over PARALLEL concurrent loops.
      await Promise.all(
        Array.from({ length: PARALLEL }, async (_, lane) => {
          for (let cycle = lane; cycle < CYCLES; cycle += PARALLEL) {
            const t0 = performance.now();
            await subject.cycle(lane);
            samples.push(performance.now() - t0);
          }
        }),
      );
      const used = process.cpuUsage(cpuStart);
      cpu.set(subject.name, (cpu.get(subject.name) ?? 0) + used.user + used.system);
      rates.get(subject.name)?.push(CYCLES / ((performance.now() - start) / 1000));
    }
  }
  const cycles = CYCLES * ROUNDS;
  console.log(`server ${host}, ${ROUNDS} rounds of ${CYCLES} cycles each, ${PARALLEL} at a time:`);
  for (const subject of subjects) {
    const own = rates.get(subject.name) ?? [];
    const sorted = (latencies.get(subject.name) ?? []).sort((a, b) => a - b);
    console.log(
      `  ${subject.name.padEnd(8)} ${own.map((r) => r.toFixed(0)).join(' ')} /s (median ${median(own).toFixed(0)}); ` +
        `p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms; ` +
        `client CPU ${((cpu.get(subject.name) ?? 0) / cycles).toFixed(0)} µs/cycle`,
    );
    console.log(`           per cycle: ${perCycle(tally(subject.client), before.get(subject.name) ?? new Map(), cycles)}`);
  }
  const raw = rates.get('raw') ?? [];
  for (const subject of subjects.filter((s) => s.name !== 'raw')) {
    const ratios = (rates.get(subject.name) ?? []).map((rate, i) => rate / (raw[i] ?? Number.NaN));
    console.log(`  ${subject.name} / raw per round ${ratios.map((r) => r.toFixed(2)).join(' ')} (median ${median(ratios).toFixed(2)})`);
  }
  for (const subject of subjects) await subject.close();
}

const hosts = process.env['ZK_HOSTS']?.split(',') ?? topology().zkConnectionString.split(',');
for (const host of hosts) await compareOn(host);
