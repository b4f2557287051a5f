import { type CheckContext, formatDuration, formatTime } from './check-context.js';
import { describeHold } from './check-overlap.js';
import type { Hold, HistoryModel } from './holds.js';
import { KILL_FAULTS, type NemesisWindow } from './nemesis-windows.js';
import { type Violation, seqList } from './violation.js';

/** A measured loss signal. */
export interface LossSignalLatency {
  readonly hold: Hold;
  /** `lost.t − max(deadline, resume)`, ns; negative when the loss was detected before validity ended. */
  readonly latencyNs: number;
}

/** When the hold's process last came back from a pause (a fault window targeting it) before `until`. */
function resumedAt(windows: readonly NemesisWindow[], hold: Hold, until: number): number {
  let resumed = -Infinity;
  for (const window of windows) {
    if (window.target !== hold.proc || window.from === window.to) continue;
    if (window.to <= until && window.to >= hold.start) resumed = Math.max(resumed, window.to);
  }
  return resumed;
}

/** Latency of every loss signal that has a reference point (a deadline or a resume), in hold order. */
export function lossSignalLatencies(model: HistoryModel, context: CheckContext): LossSignalLatency[] {
  const latencies: LossSignalLatency[] = [];
  for (const hold of model.holds) {
    const lost = hold.lost;
    if (lost === undefined || hold.endCause === 'release') continue;
    const reference = Math.max(hold.deadline ?? -Infinity, resumedAt(context.windows, hold, lost.t));
    if (reference === -Infinity) continue;
    latencies.push({ hold, latencyNs: lost.t - reference });
  }
  return latencies;
}

function wasKilled(windows: readonly NemesisWindow[], hold: Hold): boolean {
  return windows.some((window) => KILL_FAULTS.has(window.fault) && window.target === hold.proc && window.to >= hold.start);
}

/**
 * L1: the loss signal fires within ε after `max(validity deadline, resume from a pause)`. A hold whose
 * deadline passed with no signal at all is also a violation once its process is seen alive (any
 * event) after the bound; a process that was killed, or the end of the run, excuses the silence.
 */
export function checkLatency(model: HistoryModel, context: CheckContext, latencies: readonly LossSignalLatency[]): Violation[] {
  const violations: Violation[] = [];
  for (const { hold, latencyNs } of latencies) {
    if (latencyNs <= context.lossSignalBoundNs) continue;
    violations.push({
      property: 'L1',
      run: context.run,
      key: hold.key,
      events: seqList([hold.ok.seq, hold.lost?.seq]),
      message: `${describeHold(hold)} was told of its loss ${formatDuration(latencyNs)} after its validity ended (bound ${formatDuration(context.lossSignalBoundNs)})`,
    });
  }
  for (const hold of model.holds) {
    if (hold.lost !== undefined || hold.endCause !== 'expired' || hold.deadline === null) continue;
    const expected = Math.max(hold.deadline, resumedAt(context.windows, hold, Infinity)) + context.lossSignalBoundNs;
    // A release invoked before the signal was due ends the hold without one.
    const released = (hold.release?.invoke ?? hold.release?.completion)?.t ?? Infinity;
    const lastSeen = model.lastSeenByProc.get(hold.proc) ?? -Infinity;
    if (released <= expected || lastSeen <= expected || wasKilled(context.windows, hold)) continue;
    violations.push({
      property: 'L1',
      run: context.run,
      key: hold.key,
      events: seqList([hold.ok.seq]),
      message: `${describeHold(hold)}: validity ended at ${formatTime(context, hold.deadline)} and no loss signal came, although the process was still running at ${formatTime(context, lastSeen)}`,
    });
  }
  return violations;
}
