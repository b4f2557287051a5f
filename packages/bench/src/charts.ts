/**
 * The SVG charts of docs/BENCHMARKS.md, from one run's results: latency distributions of the
 * uncontended and 64-key runs per backend against the baselines, and the hand-off distribution
 * under contention. Files go to docs/bench/ (see cli.ts); the markdown links them.
 */
import type { ContentionResult } from './contention.js';
import type { ParallelKeysResult } from './parallel-keys.js';
import { renderDistributionChart, type DistributionRow } from './svg-chart.js';
import type { UncontendedResult } from './uncontended.js';

/** One chart: its file name under docs/bench/, a title (also the image's alt text) and the SVG. */
export interface Chart {
  readonly file: string;
  readonly title: string;
  readonly svg: string;
}

type Latency = Pick<UncontendedResult, 'backend' | 'label' | 'kind' | 'p50Ms' | 'p90Ms' | 'p99Ms' | 'maxMs'>;

const latencyRow = (result: Latency): DistributionRow => ({
  group: result.backend,
  label: result.label,
  kind: result.kind,
  p50: result.p50Ms,
  p90: result.p90Ms,
  p99: result.p99Ms,
  max: result.maxMs,
});

/** Every chart the results allow (a chart without rows is left out). */
export function buildCharts(results: {
  readonly uncontended: readonly UncontendedResult[];
  readonly parallelKeys: readonly ParallelKeysResult[];
  readonly contention: readonly ContentionResult[];
}): Chart[] {
  const charts: Chart[] = [];
  const add = (file: string, title: string, rows: DistributionRow[]): void => {
    if (rows.length > 0) charts.push({ file, title, svg: renderDistributionChart(title, rows) });
  };
  add('uncontended-latency.svg', 'Uncontended acquire + release latency, ms (one client, one key)', results.uncontended.map(latencyRow));
  add('parallel-keys-latency.svg', 'Acquire + release latency with 64 keys in parallel, ms (one client)', results.parallelKeys.map(latencyRow));
  add(
    'handoff-latency.svg',
    'Hand-off latency under contention, ms (a release to the next waiting client’s grant)',
    results.contention.map((result) => ({
      group: result.backend,
      label: result.label,
      kind: result.kind,
      p50: result.handoffP50Ms,
      p90: result.handoffP90Ms,
      p99: result.handoffP99Ms,
      max: result.handoffMaxMs,
    })),
  );
  return charts;
}
