import type { NemesisWindow } from './nemesis-windows.js';

/** What every property check needs besides the history model. */
export interface CheckContext {
  readonly run: string;
  /** Tolerance when comparing times recorded by different processes, ns. */
  readonly slackNs: number;
  /** The loss-signal bound ε of L1, ns. */
  readonly lossSignalBoundNs: number;
  /** The run's fault windows, to cite in violations. */
  readonly windows: readonly NemesisWindow[];
  /** The run's first `t`, ns: messages show times relative to it. */
  readonly origin: number;
}

/** A time as "12.345 ms" from the start of the run, for messages. */
export function formatTime(context: CheckContext, t: number): string {
  if (!Number.isFinite(t)) return 'never';
  return `${((t - context.origin) / 1e6).toFixed(3)} ms`;
}

/** A duration in ns as "1.234 ms". */
export function formatDuration(ns: number): string {
  return `${(ns / 1e6).toFixed(3)} ms`;
}
