/**
 * The pure parts of the bench: parsing the servers' counter formats, deltas, wake-up and request
 * definitions, medians and paired round ratios, the SVG chart. No servers, no timing.
 */
import { describe, expect, it } from 'vitest';
import { serverRequests } from '../src/held-locks.js';
import { computeRatios } from '../src/report.js';
import { median } from '../src/rounds.js';
import { counterDelta, parseCommandMicros, parseCommandStats, parseMntr, parsePrometheus, sumMatching } from '../src/server-counters.js';
import { escapeXml, renderDistributionChart } from '../src/svg-chart.js';
import type { UncontendedResult } from '../src/uncontended.js';
import { wakeupsFromCounters } from '../src/waiters.js';

describe('server counter parsing', () => {
  it('reads calls per command from INFO commandstats', () => {
    const text = '# Commandstats\r\ncmdstat_evalsha:calls=5168,usec=1,usec_per_call=0.1,rejected_calls=0,failed_calls=0\r\ncmdstat_set:calls=12,usec=3\r\n';
    expect(parseCommandStats(text)).toEqual({ cmdstat_evalsha: 5168, cmdstat_set: 12 });
  });

  it('reads the µs spent per command from INFO commandstats', () => {
    const text = '# Commandstats\r\ncmdstat_evalsha:calls=5168,usec=96000,usec_per_call=18.58,rejected_calls=0,failed_calls=0\r\ncmdstat_set:calls=12,usec=3\r\n';
    expect(parseCommandMicros(text)).toEqual({ cmdstat_evalsha: 96_000, cmdstat_set: 3 });
  });

  it('keeps the numeric lines of mntr', () => {
    const text = 'zk_version\t3.8.0-abc, built on 2024\nzk_server_state\tfollower\nzk_packets_received\t8573\nzk_avg_latency\t0.608\n';
    expect(parseMntr(text)).toEqual({ zk_packets_received: 8573, zk_avg_latency: 0.608 });
  });

  it('keeps the matching Prometheus counters with their labels, never comments', () => {
    const text = [
      '# HELP etcd_debugging_mvcc_events_total Total number of events sent by this member.',
      '# TYPE etcd_debugging_mvcc_events_total counter',
      'etcd_debugging_mvcc_events_total 100',
      'grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 7',
      'etcd_mvcc_db_total_size_in_bytes 20480',
    ].join('\n');
    expect(parsePrometheus(text, /^(etcd_debugging_mvcc_events_total|grpc_server_msg_received_total)/)).toEqual({
      etcd_debugging_mvcc_events_total: 100,
      'grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"}': 7,
    });
  });

  it('subtracts snapshots, counting a missing side as 0', () => {
    expect(counterDelta({ a: 5, b: 2 }, { a: 9, c: 4 })).toEqual({ a: 4, b: -2, c: 4 });
    expect(sumMatching({ cmdstat_eval: 2, cmdstat_evalsha: 30, cmdstat_set: 99 }, /^cmdstat_(eval|evalsha)$/)).toBe(32);
  });
});

describe('wake-ups and requests from counter deltas', () => {
  it('redis: script calls minus the release-script calls', () => {
    expect(wakeupsFromCounters('redis', { cmdstat_evalsha: 5168, cmdstat_set: 5167 }, 101, 5)).toBe(5067);
  });

  it('redlock: script calls per master, less the opening release, halved (each round is an acquire and its release)', () => {
    // 130 rounds on each of 5 masters: 130 acquire calls + 130 releases + the holder's release = 261 per master.
    expect(wakeupsFromCounters('redlock', { cmdstat_evalsha: 1300, cmdstat_eval: 5, cmdstat_set: 7 }, 101, 5)).toBe(130);
  });

  it('zookeeper: watches fired of every kind; etcd: watch events sent', () => {
    expect(wakeupsFromCounters('zookeeper', { zk_sum_node_deleted_watch_count: 100, zk_sum_node_children_watch_count: 3, zk_packets_received: 305 }, 101, 5)).toBe(103);
    expect(wakeupsFromCounters('etcd', { etcd_debugging_mvcc_events_total: 100, 'grpc_server_msg_received_total{grpc_method="Txn"}': 201 }, 101, 5)).toBe(100);
  });

  it('counts requests per backend, not the commands a script runs inside', () => {
    expect(serverRequests('redis', { cmdstat_evalsha: 241, cmdstat_pexpire: 120_000, cmdstat_get: 60_000 })).toBe(241);
    expect(serverRequests('redlock', { cmdstat_evalsha: 10, cmdstat_set: 5, cmdstat_get: 500 })).toBe(15);
    expect(serverRequests('etcd', { 'grpc_server_msg_received_total{grpc_method="LeaseKeepAlive"}': 6, 'grpc_server_msg_received_total{grpc_method="Range"}': 2, etcd_debugging_mvcc_events_total: 50 })).toBe(8);
    expect(serverRequests('zookeeper', { zk_packets_received: 15, zk_packets_sent: 21 })).toBe(15);
  });
});

describe('rounds', () => {
  it('takes the median of odd and even counts', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('pairs round i of ours with round i of the baseline', () => {
    const row = (subject: string, kind: UncontendedResult['kind'], roundOpsPerSec: number[]): UncontendedResult => ({
      subject, backend: 'redis', kind, label: subject, cycles: 1, seconds: 1, opsPerSec: median(roundOpsPerSec), bestOpsPerSec: Math.max(...roundOpsPerSec),
      roundOpsPerSec, p50Ms: 1, p90Ms: 1, p99Ms: 1, maxMs: 1,
    });
    // The machine was slow for the first rounds, and ours alone was hit once more in round 3: the
    // ratio of the medians (10 / 200) would say 0.05; paired rounds say 0.5, with the outlier in the range.
    const ours = row('ours', 'fencelock', [10, 10, 10, 100, 100]);
    const theirs = row('theirs', 'raw', [20, 20, 200, 200, 200]);
    const [ratio] = computeRatios([ours, theirs], [], []);
    expect(ratio).toMatchObject({ ratio: 0.5, roundRange: { min: 0.05, max: 0.5, rounds: 5 } });
  });
});

describe('SVG chart', () => {
  it('escapes text and draws one labelled row per implementation, grouped', () => {
    expect(escapeXml('a<b & "c">')).toBe('a&lt;b &amp; &quot;c&quot;&gt;');
    const svg = renderDistributionChart('t <1>', [
      { group: 'redis', label: 'ours & co', kind: 'fencelock', p50: 0.2, p90: 0.4, p99: 1, max: 30 },
      { group: 'redis', label: 'raw', kind: 'raw', p50: 0.1, p90: 0.2, p99: 0.5, max: 2 },
      { group: 'etcd', label: 'nothing', kind: 'peer', p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN },
    ]);
    expect(svg).toContain('<text x="8" y="24" font-size="15" font-weight="bold">t &lt;1&gt;</text>');
    expect(svg).toContain('>ours &amp; co</text>');
    expect(svg.match(/font-weight="bold">(redis|etcd)</g)).toHaveLength(2);
    expect(svg).toContain('no samples');
    // Log axis from 0.01 ms (below the smallest p50) to 100 ms (above the largest max).
    expect(svg).toContain('>0.01 ms</text>');
    expect(svg).toContain('>100 ms</text>');
  });
});
