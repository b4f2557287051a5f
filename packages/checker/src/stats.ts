import type { HandoverGap } from './check-failover.js';
import type { LossSignalLatency } from './check-latency.js';
import type { FencedWriteRecord } from './fenced-write.js';
import type { HistoryModel } from './holds.js';
import type { PropertyId, Violation } from './violation.js';

/** Nearest-rank percentiles of a sample, in ms. */
export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Figures of one run. Reported, never failing. */
export interface HistoryStats {
  readonly run: string;
  /** Client operations: invocations, plus completions that had none (automatic renewals). */
  readonly operations: number;
  /** `acquire ok` count. */
  readonly acquisitions: number;
  /** `acquire fail` count (contention, refusals). */
  readonly acquireFailures: number;
  /** Acquires with an unknown outcome (`info`, or never completed). */
  readonly acquireIndeterminate: number;
  /** Loss signals by reason (the `err` of `lost` events; `unknown` when absent). */
  readonly lostByReason: Readonly<Record<string, number>>;
  /** Write attempts in the fenced store's log. */
  readonly fencedWrites: number;
  /** Writes the fenced store refused as stale. */
  readonly fenceRejections: number;
  /** The largest loss-signal latency (see L1), ms; `null` when no loss had a reference point. */
  readonly maxLossSignalLatencyMs: number | null;
  /**
   * The longest a key stayed without a holder while someone waited for it, ms (after a crash: the
   * failover time); `null` when no hand-over had a gap.
   */
  readonly maxHandoverGapMs: number | null;
  /** Acquire latency (invoke → ok) of successful acquires, ms; `null` when there were none. */
  readonly acquireLatencyMs: Percentiles | null;
  /** Violations per property. */
  readonly violationsByProperty: Readonly<Partial<Record<PropertyId, number>>>;
}

/** Nearest-rank percentiles of `values` (any order); `null` for an empty sample. */
export function percentiles(values: readonly number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
  return { count: sorted.length, p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: sorted[sorted.length - 1] ?? 0 };
}

/** Computes a run's statistics. */
export function computeStats(
  model: HistoryModel,
  writes: readonly FencedWriteRecord[],
  latencies: readonly LossSignalLatency[],
  gaps: readonly HandoverGap[],
  violations: readonly Violation[],
): HistoryStats {
  const lostByReason: Record<string, number> = {};
  for (const event of model.clientEvents) {
    if (event.f !== 'lost') continue;
    const reason = event.err ?? 'unknown';
    lostByReason[reason] = (lostByReason[reason] ?? 0) + 1;
  }
  const violationsByProperty: Partial<Record<PropertyId, number>> = {};
  for (const violation of violations) violationsByProperty[violation.property] = (violationsByProperty[violation.property] ?? 0) + 1;
  const acquireLatencies = model.acquireOperations.flatMap((operation) =>
    operation.invoke !== undefined && operation.completion !== undefined ? [(operation.completion.t - operation.invoke.t) / 1e6] : [],
  );
  const maxLatency = latencies.reduce((max, { latencyNs }) => Math.max(max, latencyNs), -Infinity);
  return {
    run: model.run,
    operations: model.operationCount,
    acquisitions: model.holds.length,
    acquireFailures: model.attemptsWithoutHold.filter((attempt) => attempt.outcome === 'fail').length,
    acquireIndeterminate: model.attemptsWithoutHold.filter((attempt) => attempt.outcome === 'info').length,
    lostByReason,
    fencedWrites: writes.length,
    fenceRejections: writes.filter((write) => !write.accepted).length,
    maxLossSignalLatencyMs: latencies.length === 0 ? null : maxLatency / 1e6,
    maxHandoverGapMs: gaps.length === 0 ? null : gaps.reduce((max, { gapNs }) => Math.max(max, gapNs), 0) / 1e6,
    acquireLatencyMs: percentiles(acquireLatencies),
    violationsByProperty,
  };
}
