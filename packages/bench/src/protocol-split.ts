/**
 * Protocol or library: splits `@fencelock/redis`'s gap to the raw loop with its protocol twin
 * (`subjects-protocol.ts`), which sends the provider's requests with no library around them. Both
 * ratios are medians of per-round ratios of the same interleaved rounds.
 */
import type { AllocationResult } from './allocation.js';
import type { ParallelKeysResult } from './parallel-keys.js';
import { pairedRatio, type ThroughputResult } from './rounds.js';
import type { UncontendedResult } from './uncontended.js';

/** The subjects the split compares. */
export const PROTOCOL_SPLIT_SUBJECTS = {
  ours: 'redis/fencelock',
  twin: 'redis/protocol-twin',
  raw: 'redis/raw-ioredis',
  peers: ['redis/redis-semaphore-mutex', 'redis/node-redlock'],
} as const;

const fmt = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

/** One scenario's row: fencelock ÷ twin, twin ÷ raw, fencelock ÷ raw, twin ÷ each peer (NaN where a side is missing). */
export interface ProtocolSplitRow {
  readonly scenario: string;
  readonly library: number;
  readonly protocol: number;
  readonly overall: number;
  readonly twinAgainstPeers: readonly number[];
}

/** The split's rows for the throughput scenarios that ran the twin. */
export function protocolSplitRows(scenarios: readonly (readonly [string, readonly ThroughputResult[]])[]): ProtocolSplitRow[] {
  const rows: ProtocolSplitRow[] = [];
  for (const [scenario, results] of scenarios) {
    const find = (id: string): ThroughputResult | undefined => results.find((r) => r.subject === id);
    const ratio = (a: string, b: string): number => {
      const [x, y] = [find(a), find(b)];
      return x === undefined || y === undefined || y.opsPerSec <= 0 ? Number.NaN : pairedRatio(x, y).ratio;
    };
    const { ours, twin, raw, peers } = PROTOCOL_SPLIT_SUBJECTS;
    if (find(twin) === undefined) continue;
    rows.push({
      scenario,
      library: ratio(ours, twin),
      protocol: ratio(twin, raw),
      overall: ratio(ours, raw),
      twinAgainstPeers: peers.map((peer) => ratio(twin, peer)),
    });
  }
  return rows;
}

/** The section's Markdown, or nothing when the twin did not run. */
export function protocolSplitMarkdown(
  uncontended: readonly UncontendedResult[],
  parallelKeys: readonly ParallelKeysResult[],
  allocation: readonly AllocationResult[],
): string[] {
  const rows = protocolSplitRows([
    ['uncontended ops/s', uncontended],
    ['64 keys ops/s', parallelKeys],
  ]);
  if (rows.length === 0) return [];
  const { ours, twin, raw, peers } = PROTOCOL_SPLIT_SUBJECTS;
  const label = (id: string): string => [...uncontended, ...parallelKeys, ...allocation].find((r) => r.subject === id)?.label ?? id;
  const lines = [
    '### Protocol or library: where the gap of @fencelock/redis to the raw loop comes from',
    '',
    `The protocol twin (\`src/subjects-protocol.ts\`) is a raw ioredis loop that sends exactly what ${label(ours)} sends on an`,
    'uncontended acquire + release (its two scripts by SHA, the same keys and arguments; `test/protocol-twin.test.ts` checks',
    'that through `MONITOR`), with no library around them. So twin ÷ raw is what the protocol costs (the fencing token, the',
    'holder record `inspect` reads and the line of waiters, on the wire and in the server), and fencelock ÷ twin is what the',
    'library adds on top (validation, the handle with its validity deadline and loss signal, events, retries). Medians of',
    'the per-round ratios of the interleaved rounds of 1 and 3a.',
    '',
    `| scenario | fencelock ÷ twin (the library) | twin ÷ ${label(raw)} (the protocol) | fencelock ÷ raw | ${peers.map((peer) => `twin ÷ ${label(peer)}`).join(' | ')} |`,
    `|---|---:|---:|---:|${peers.map(() => '---:').join('|')}|`,
    ...rows.map((r) => `| ${r.scenario} | ${fmt(r.library, 2)} | ${fmt(r.protocol, 2)} | ${fmt(r.overall, 2)} | ${r.twinAgainstPeers.map((v) => fmt(v, 2)).join(' | ')} |`),
    '',
  ];
  const cost = (id: string): AllocationResult | undefined => allocation.find((r) => r.subject === id);
  const [o, t, w] = [cost(ours), cost(twin), cost(raw)];
  if (o !== undefined && t !== undefined && w !== undefined) {
    const server = (r: AllocationResult): string => fmt(r.serverMicrosPerCycle ?? Number.NaN, 1);
    lines.push(
      `Per cycle (4b): client CPU ${fmt(o.cpuMicrosPerCycle, 1)} µs (fencelock), ${fmt(t.cpuMicrosPerCycle, 1)} (twin), ${fmt(w.cpuMicrosPerCycle, 1)} (raw); ` +
        `server ${server(o)}, ${server(t)}, ${server(w)} µs; allocated ${fmt(o.bytesPerCycle, 0)}, ${fmt(t.bytesPerCycle, 0)}, ${fmt(w.bytesPerCycle, 0)} B.`,
      '',
    );
  }
  return lines;
}
