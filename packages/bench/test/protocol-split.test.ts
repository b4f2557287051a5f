import { describe, expect, it } from 'vitest';
import { PROTOCOL_SPLITS, protocolSplitMarkdown, protocolSplitRows, type ProtocolSplit } from '../src/protocol-split.js';
import type { ThroughputResult } from '../src/rounds.js';

/** A throughput result with these per-round ops/s (the other figures do not enter the split). */
function result(subject: string, rounds: readonly number[]): ThroughputResult {
  return {
    subject, backend: 'redis', kind: subject.endsWith('/fencelock') ? 'fencelock' : 'raw', label: subject,
    cycles: 1, seconds: 1, opsPerSec: rounds[0] ?? 0, bestOpsPerSec: Math.max(...rounds), roundOpsPerSec: rounds,
    p50Ms: 1, p90Ms: 1, p99Ms: 1, maxMs: 1,
  };
}

describe('protocol split', () => {
  const split = PROTOCOL_SPLITS.find((candidate) => candidate.raw !== undefined) as ProtocolSplit;
  const { ours, twin, raw = '', peers } = split;
  const [semaphore = '', redlock = ''] = peers;

  it('splits fencelock ÷ raw into the library (÷ twin) and the protocol (twin ÷ raw), round by round', () => {
    // Round 2 ran on a machine twice as fast for everyone: paired rounds cancel it.
    const rows = protocolSplitRows(split, [
      ['uncontended ops/s', [
        result(ours, [450, 900, 450]),
        result(twin, [500, 1000, 500]),
        result(raw, [800, 1600, 800]),
        result(semaphore, [400, 800, 400]),
        result(redlock, [1000, 2000, 1000]),
      ]],
    ]);
    expect(rows).toEqual([{ scenario: 'uncontended ops/s', library: 0.9, protocol: 0.63, overall: 0.56, twinAgainstPeers: [1.25, 0.5] }]);
  });

  it('has nothing to say where the twin did not run', () => {
    expect(protocolSplitRows(split, [['64 keys ops/s', [result(ours, [1, 1]), result(raw, [1, 1])]]])).toEqual([]);
    expect(protocolSplitMarkdown([result(ours, [1, 1]), result(raw, [1, 1])], [], [])).toEqual([]);
  });

  it('shows a missing side as a dash, not a number', () => {
    const lines = protocolSplitMarkdown([result(ours, [1, 1]), result(twin, [1, 1])], [], []);
    expect(lines.find((line) => line.startsWith('| uncontended'))).toBe('| uncontended ops/s | 1.00 | — | — | — | — |');
  });

  it('leaves out the raw columns of a backend without a raw loop (Redlock)', () => {
    const redlockSplit = PROTOCOL_SPLITS.find((candidate) => candidate.raw === undefined) as ProtocolSplit;
    const lines = protocolSplitMarkdown([result(redlockSplit.ours, [1, 2]), result(redlockSplit.twin, [2, 4]), ...redlockSplit.peers.map((peer) => result(peer, [1, 2]))], [], []);
    const header = lines.find((line) => line.startsWith('| scenario'));
    expect(header).not.toContain('(the protocol)');
    expect(lines.find((line) => line.startsWith('| uncontended'))).toBe('| uncontended ops/s | 0.50 | 2.00 | 2.00 |');
  });
});
