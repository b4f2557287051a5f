import type { NemesisEvent } from './history.js';

/** A fault window: from a `start-X` step to its `stop-X` (or the end of the run), or one instant. */
export interface NemesisWindow {
  /** The fault's name without `start-` / `stop-` (`partition`, `pause`, `kill`). */
  readonly fault: string;
  readonly target: string | undefined;
  /** ns on the `t` axis. */
  readonly from: number;
  /** ns; `Infinity` when the window never closed. */
  readonly to: number;
  /** The `seq` of the steps that opened and closed it. */
  readonly events: readonly number[];
}

/** Pairs `start-X` and `stop-X` steps (same fault and target) into windows; other steps are instants. */
export function nemesisWindows(events: readonly NemesisEvent[]): NemesisWindow[] {
  const open = new Map<string, NemesisEvent[]>();
  const windows: NemesisWindow[] = [];
  for (const event of events) {
    const target = event.nemesis.target;
    const match = /^(start|stop)-(.+)$/.exec(event.f);
    if (match === null) {
      windows.push({ fault: event.f, target, from: event.t, to: event.t, events: [event.seq] });
      continue;
    }
    const fault = match[2] ?? event.f;
    const id = `${fault}\u0000${target ?? ''}`;
    if (match[1] === 'start') {
      const list = open.get(id);
      if (list === undefined) open.set(id, [event]);
      else list.push(event);
      continue;
    }
    const start = open.get(id)?.shift();
    windows.push({ fault, target, from: start?.t ?? event.t, to: event.t, events: start === undefined ? [event.seq] : [start.seq, event.seq] });
  }
  for (const list of open.values()) {
    for (const start of list) {
      windows.push({ fault: start.f.slice('start-'.length), target: start.nemesis.target, from: start.t, to: Infinity, events: [start.seq] });
    }
  }
  return windows.sort((a, b) => a.from - b.from);
}

/** The `seq` of the steps of every window that intersects `[from, to]`. */
export function nemesisDuring(windows: readonly NemesisWindow[], from: number, to: number): number[] {
  const seqs = windows.filter((window) => window.from <= to && window.to >= from).flatMap((window) => window.events);
  return [...new Set(seqs)].sort((a, b) => a - b);
}

/** Fault names that mean "this process was killed": its silence afterwards proves nothing. */
export const KILL_FAULTS: ReadonlySet<string> = new Set(['kill', 'crash']);
