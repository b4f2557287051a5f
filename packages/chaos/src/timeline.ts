import type { HistoryEvent } from '@fencelock/history-checker';

/** Client events a fault's timeline shows: who held, who renewed, who learned of a loss. */
const SHOWN = new Set(['acquire:ok', 'extend:ok', 'lost:info', 'release:ok', 'release:fail']);
const MARKERS = new Set(['run-start', 'run-end']);

/**
 * A negative control that finds nothing must say why, from the CI log alone: the nemesis' steps and
 * the grants, renewals and losses around them, in ms from the first step (at most `limit` lines).
 */
export function faultTimeline(events: readonly HistoryEvent[], limit = 60): string[] {
  const first = events.find((event) => event.nemesis !== undefined && !MARKERS.has(event.f));
  if (first === undefined) return ['timeline: the nemesis took no step'];
  const ms = (t: number): string => `${((t - first.t) / 1e6).toFixed(0).padStart(6)} ms`;
  // From a second before the first step on: what led into the fault matters, not the whole run.
  const from = first.t - 1e9;
  const lines: string[] = [];
  for (const event of events) {
    if (event.t < from || MARKERS.has(event.f)) continue;
    if (event.nemesis !== undefined) {
      const target = event.nemesis.target === undefined ? '' : ` ${event.nemesis.target}`;
      const value = event.nemesis.value === undefined ? '' : ` ${JSON.stringify(event.nemesis.value)}`;
      lines.push(`${ms(event.t)}  nemesis ${event.f}${target}${value}`);
    } else if (SHOWN.has(`${event.f}:${event.type}`)) {
      const valid = event.validUntil === null ? '' : ` valid until ${ms(event.validUntil)}`;
      const err = event.err === null ? '' : ` (${event.err})`;
      lines.push(`${ms(event.t)}  ${event.proc} ${event.f} ${event.type} token ${event.token ?? '—'}${valid}${err}`);
    }
  }
  return ['timeline (ms from the first fault step):', ...lines.slice(0, limit)];
}
