import { checkAfterLoss } from './check-after-loss.js';
import { checkCleanup } from './check-cleanup.js';
import { checkElections } from './check-election.js';
import type { CheckContext } from './check-context.js';
import { checkFailover, handoverGaps } from './check-failover.js';
import { checkFence } from './check-fence.js';
import { checkLatency, lossSignalLatencies } from './check-latency.js';
import { checkLinearizable } from './check-linearizable.js';
import { checkOverlap } from './check-overlap.js';
import { checkResurrection } from './check-resurrection.js';
import { checkSemaphores } from './check-semaphore.js';
import { checkTokens } from './check-tokens.js';
import type { FencedWriteRecord } from './fenced-write.js';
import type { HistoryEvent } from './history.js';
import { type ClockMapping, buildHistoryModel } from './holds.js';
import { nemesisDuring, nemesisWindows } from './nemesis-windows.js';
import { type HistoryStats, computeStats } from './stats.js';
import { PROPERTY_IDS, type Violation } from './violation.js';

/** Options of {@link checkHistory}. */
export interface CheckOptions {
  /**
   * Tolerance when comparing times of different processes, in ms: IPC delay and the `t ≈ tc`
   * conversion of `validUntil`. @default 2
   */
  readonly slackMs?: number;
  /** ε of L1: how late after validity ends the loss signal may fire, in ms. @default 50 */
  readonly lossSignalBoundMs?: number;
  /** How `validUntil` maps onto `t`; `offset` for clients under libfaketime. @default 'shared' */
  readonly clock?: ClockMapping;
  /** The fenced store's write log for this run, in the order the store handled it; enables S3. */
  readonly fencedWrites?: readonly FencedWriteRecord[];
  /**
   * L2: after a holder's process is killed (a `kill` step targeting it), the longest a waiter may wait
   * for the key, in ms; the harness passes TTL + retry backoff + 1 000. @default no L2 check
   */
  readonly failoverBoundMs?: number;
  /**
   * The store's final read per key (W2, set-full): every value the store acknowledged (accepted) must
   * be in it, else S3. Only keys present here are compared.
   */
  readonly finalReads?: Readonly<Record<string, readonly string[]>>;
  /** Lock keys, znodes or leases found on the backend after the run; each is an L3 violation. */
  readonly leftoverKeys?: readonly string[];
  /** The run id to report when `events` is empty. @default '' */
  readonly run?: string;
}

/** The verdict on one run. */
export interface CheckResult {
  /** True when there is no violation. */
  readonly ok: boolean;
  readonly run: string;
  /** Every violation found, by property (S1 … L3), then by key. */
  readonly violations: readonly Violation[];
  readonly stats: HistoryStats;
}

function nonNegativeMs(value: number | undefined, fallback: number, name: string): number {
  const ms = value ?? fallback;
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`${name} must be a finite number of ms ≥ 0, got ${String(value)}`);
  return ms;
}

/**
 * Checks one run's history against S1–S8 and L1 (L2 given `failoverBoundMs`, L3 given `leftoverKeys`). Indeterminate
 * acquires never cause a violation; see each `check-*.ts` for its property.
 * @throws RangeError when `events` mixes runs (split them with {@link splitRuns}) or an option is out of range.
 */
export function checkHistory(events: readonly HistoryEvent[], options: CheckOptions = {}): CheckResult {
  const runs = new Set(events.map((event) => event.run));
  if (runs.size > 1) throw new RangeError(`checkHistory checks one run at a time; got ${runs.size}: ${[...runs].join(', ')}`);
  const run = events[0]?.run ?? options.run ?? '';
  const slackNs = nonNegativeMs(options.slackMs, 2, 'slackMs') * 1e6;
  const model = buildHistoryModel(run, events, { slackNs, clock: options.clock ?? 'shared' });
  const context: CheckContext = {
    run,
    slackNs,
    lossSignalBoundNs: nonNegativeMs(options.lossSignalBoundMs, 50, 'lossSignalBoundMs') * 1e6,
    windows: nemesisWindows(model.nemesis),
    origin: events.reduce((min, event) => Math.min(min, event.t), Infinity),
  };
  const writes = options.fencedWrites ?? [];
  const latencies = lossSignalLatencies(model, context);
  const gaps = handoverGaps(model);
  const failoverBoundNs = options.failoverBoundMs === undefined ? undefined : nonNegativeMs(options.failoverBoundMs, 0, 'failoverBoundMs') * 1e6;
  const found = [
    ...checkOverlap(model, context),
    ...checkLinearizable(model, context),
    ...(options.fencedWrites === undefined ? [] : checkFence(model, writes, context, options.finalReads)),
    ...checkTokens(model, context),
    ...checkAfterLoss(model, context),
    ...checkResurrection(model, context),
    ...checkSemaphores(model, context),
    ...checkElections(model, context),
    ...checkLatency(model, context, latencies),
    ...(failoverBoundNs === undefined ? [] : checkFailover(model, context, gaps, failoverBoundNs)),
    ...checkCleanup(run, options.leftoverKeys ?? []),
  ];
  const order = (violation: Violation): number => PROPERTY_IDS.indexOf(violation.property);
  const violations = withNemesis(found, events, context).sort((a, b) => order(a) - order(b) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { ok: violations.length === 0, run, violations, stats: computeStats(model, writes, latencies, gaps, violations) };
}

/** Cites the fault windows active during each violation's events, where the check did not already. */
function withNemesis(violations: readonly Violation[], events: readonly HistoryEvent[], context: CheckContext): Violation[] {
  if (context.windows.length === 0) return [...violations];
  const timeOf = new Map(events.map((event) => [event.seq, event.t]));
  return violations.map((violation) => {
    if (violation.nemesis !== undefined) return violation;
    const times = violation.events.flatMap((seq) => timeOf.get(seq) ?? []);
    if (times.length === 0) return violation;
    const nemesis = nemesisDuring(context.windows, Math.min(...times), Math.max(...times));
    return nemesis.length === 0 ? violation : { ...violation, nemesis };
  });
}

/** Splits a history holding several runs into one list per run, keeping order. */
export function splitRuns(events: readonly HistoryEvent[]): Map<string, HistoryEvent[]> {
  const runs = new Map<string, HistoryEvent[]>();
  for (const event of events) {
    const list = runs.get(event.run);
    if (list === undefined) runs.set(event.run, [event]);
    else list.push(event);
  }
  return runs;
}
