/**
 * Protocol or library: splits the gap of `@fencelock/redis`, `@fencelock/redlock`, `@fencelock/etcd` and
 * `@fencelock/zookeeper` to the raw loop and the peers with their protocol twins (`subjects-protocol*.ts`), which send the providers' requests with
 * no library around them. Every ratio is a median of per-round ratios of the same interleaved rounds.
 */
import type { AllocationResult } from './allocation.js';
import type { ParallelKeysResult } from './parallel-keys.js';
import { pairedRatio, type ThroughputResult } from './rounds.js';
import type { UncontendedResult } from './uncontended.js';

/** The subjects one split compares. */
export interface ProtocolSplit {
  readonly ours: string;
  readonly twin: string;
  /** The minimal raw loop on the same client, where the backend has one. */
  readonly raw?: string;
  readonly peers: readonly string[];
}

/** The splits the bench reports. */
export const PROTOCOL_SPLITS: readonly ProtocolSplit[] = [
  { ours: 'redis/fencelock', twin: 'redis/protocol-twin', raw: 'redis/raw-ioredis', peers: ['redis/redis-semaphore-mutex', 'redis/node-redlock'] },
  { ours: 'redlock/fencelock', twin: 'redlock/protocol-twin', peers: ['redlock/node-redlock', 'redlock/redis-semaphore-redlock-mutex'] },
  { ours: 'etcd/fencelock', twin: 'etcd/protocol-twin', raw: 'etcd/raw-txn', peers: ['etcd/etcd3-lock'] },
  { ours: 'zookeeper/fencelock', twin: 'zookeeper/protocol-twin', raw: 'zookeeper/raw-recipe', peers: [] },
];

const fmt = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

/** One scenario's row: fencelock ÷ twin, twin ÷ raw, fencelock ÷ raw, twin ÷ each peer (NaN where a side is missing). */
export interface ProtocolSplitRow {
  readonly scenario: string;
  readonly library: number;
  readonly protocol: number;
  readonly overall: number;
  readonly twinAgainstPeers: readonly number[];
}

/** The rows of `split` for the throughput scenarios that ran its twin. */
export function protocolSplitRows(split: ProtocolSplit, scenarios: readonly (readonly [string, readonly ThroughputResult[]])[]): ProtocolSplitRow[] {
  const rows: ProtocolSplitRow[] = [];
  for (const [scenario, results] of scenarios) {
    const find = (id: string | undefined): ThroughputResult | undefined => results.find((r) => r.subject === id);
    const ratio = (a: string, b: string | undefined): number => {
      const [x, y] = [find(a), find(b)];
      return x === undefined || y === undefined || y.opsPerSec <= 0 ? Number.NaN : pairedRatio(x, y).ratio;
    };
    if (find(split.twin) === undefined) continue;
    rows.push({
      scenario,
      library: ratio(split.ours, split.twin),
      protocol: ratio(split.twin, split.raw),
      overall: ratio(split.ours, split.raw),
      twinAgainstPeers: split.peers.map((peer) => ratio(split.twin, peer)),
    });
  }
  return rows;
}

/** The section's Markdown, or nothing when no twin ran. */
export function protocolSplitMarkdown(
  uncontended: readonly UncontendedResult[],
  parallelKeys: readonly ParallelKeysResult[],
  allocation: readonly AllocationResult[],
): string[] {
  const scenarios = [
    ['uncontended ops/s', uncontended],
    ['64 keys ops/s', parallelKeys],
  ] as const;
  const label = (id: string): string => [...uncontended, ...parallelKeys, ...allocation].find((r) => r.subject === id)?.label ?? id;
  const tables: string[] = [];
  for (const split of PROTOCOL_SPLITS) {
    const rows = protocolSplitRows(split, scenarios);
    if (rows.length === 0) continue;
    const raw = split.raw;
    const rawColumns = raw === undefined ? [] : [`twin ÷ ${label(raw)} (the protocol)`, 'fencelock ÷ raw'];
    const rawCells = (r: ProtocolSplitRow): string[] => (raw === undefined ? [] : [fmt(r.protocol, 2), fmt(r.overall, 2)]);
    const columns = [`${label(split.ours)} ÷ twin (the library)`, ...rawColumns, ...split.peers.map((peer) => `twin ÷ ${label(peer)}`)];
    tables.push(
      `| scenario | ${columns.join(' | ')} |`,
      `|---|${columns.map(() => '---:').join('|')}|`,
      ...rows.map((r) => `| ${r.scenario} | ${[fmt(r.library, 2), ...rawCells(r), ...r.twinAgainstPeers.map((v) => fmt(v, 2))].join(' | ')} |`),
      '',
    );
    const cost = (id: string | undefined): AllocationResult | undefined => allocation.find((r) => r.subject === id);
    const measured = [cost(split.ours), cost(split.twin), cost(raw)].filter((r) => r !== undefined);
    if (measured.length >= 2) {
      const list = (figure: (r: AllocationResult) => number, digits: number): string => measured.map((r) => fmt(figure(r), digits)).join(' / ');
      tables.push(
        `Per cycle (4b), ${measured.map((r) => (r.kind === 'fencelock' ? 'fencelock' : r.subject === split.twin ? 'twin' : 'raw')).join(' / ')}: ` +
          `client CPU ${list((r) => r.cpuMicrosPerCycle, 1)} µs, server ${list((r) => r.serverMicrosPerCycle ?? Number.NaN, 1)} µs, allocated ${list((r) => r.bytesPerCycle, 0)} B.`,
        '',
      );
    }
  }
  if (tables.length === 0) return [];
  return [
    '### Protocol or library: where the gap to the raw loop and the peers comes from',
    '',
    'Each protocol twin is a raw client loop that sends exactly what the provider sends on an uncontended acquire + release,',
    'with no library around them: Redis (`src/subjects-protocol.ts`), its scripts by SHA with the same keys and arguments;',
    'Redlock, to every master, going on at a majority as the provider does (`test/protocol-twin.test.ts` checks both',
    'through `MONITOR`); etcd (`src/subjects-protocol-etcd.ts`), the same two transactions, built by the adapter\'s own',
    'request builders on the same session lease (`test/protocol-twin-etcd.test.ts` records both at etcd3\'s `KVClient`);',
    'ZooKeeper (`src/subjects-protocol-zookeeper.ts`), the same create (CREATE2, whose reply carries the new node\'s stat)',
    'pipelined with a watching children read, then the delete (`test/protocol-twin-zookeeper.test.ts` records both at node-zookeeper-client\'s queue).',
    'So twin ÷ raw or ÷ a peer is what the protocol costs against theirs (Redis: the fencing token, the holder record',
    '`inspect` reads and the line of waiters; etcd: the waiter key under a lease where etcdctl looks, the tombstone check',
    'and the read of who is ahead; ZooKeeper: the same three requests as the raw recipe, the node\'s creation zxid — the fencing',
    'token — taken from the create\'s reply, and the listing sent right behind the create where the raw recipe waits for it), on the wire and in the server, and fencelock ÷ twin is what the library adds on top',
    '(validation, the handle with its validity deadline and loss signal, events, retries). The twins send through the client\'s',
    'own methods, as raw client code would (ZooKeeper\'s CREATE2 excepted: node-zookeeper-client has none), while the Redis,',
    'Redlock and ZooKeeper providers encode their requests themselves: there fencelock ÷ twin is the library\'s cost less what',
    'that encoding saves on the client. Medians of the per-round ratios of the interleaved rounds of 1 and 3a.',
    '',
    ...tables,
  ];
}
