import { describe, expect, it } from 'vitest';
import { checkHistory, renderSummaryTable, renderViolations, summaryRow } from '../src/index.js';
import { HistoryBuilder } from './support/history-builder.js';

describe('renderSummaryTable', () => {
  const h = new HistoryBuilder();
  h.acquire('p1', 'k', 'a', 1n, 0, 1, 100);
  h.lost('p1', 'k', 'a', 112, 'expired');
  const rows = [
    summaryRow('redis', 'F2 holder pause', checkHistory(h.events)),
    { backend: 'redis', fault: 'F10 restart, no persistence', operations: 1234, acquisitions: 99, violations: 3, staleWritesRejected: 7, maxLossSignalLatencyMs: null, expectViolation: true },
  ];

  it('aligns a plain-text table, figures to the right', () => {
    expect(renderSummaryTable(rows)).toBe(
      [
        'backend  fault                        operations  acquisitions    violations  stale writes rejected  max loss-signal latency',
        '-------  ---------------------------  ----------  ------------  ------------  ---------------------  -----------------------',
        'redis    F2 holder pause                       1             1             0                      0                  12.0 ms',
        'redis    F10 restart, no persistence        1234            99  3 (expected)                      7                        —',
      ].join('\n'),
    );
  });

  it('renders markdown for docs', () => {
    const lines = renderSummaryTable(rows, { format: 'markdown' }).split('\n');
    expect(lines[1]).toBe('|---|---|---:|---:|---:|---:|---:|');
    expect(lines[2]).toBe('| redis | F2 holder pause | 1 | 1 | 0 | 0 | 12.0 ms |');
  });
});

describe('renderViolations', () => {
  it('lists violations with their evidence, bounded', () => {
    const h = new HistoryBuilder('r9');
    h.acquire('p1', 'k', 'a', 1n, 0, 1, 1000);
    h.acquire('p2', 'k', 'b', 2n, 2, 3, 1000);
    h.acquire('p3', 'k', 'c', 3n, 4, 5, 1000);
    const result = checkHistory(h.events);
    const lines = renderViolations(result, { limit: 2 }).split('\n');
    expect(lines[0]).toBe('run r9: 3 violation(s)');
    expect(lines[1]).toMatch(/^S1 k \[events 1, 3\] two holders of "k" at once/);
    expect(lines).toHaveLength(4);
    expect(lines[3]).toBe('… and 1 more');
    expect(renderViolations(checkHistory([], { run: 'ok' }))).toBe('run ok: no violations');
  });
});
