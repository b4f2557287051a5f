/**
 * How a subject's uncontended cycle settles as V8 compiles it: one client, acquire + release of one
 * key in a loop, cut into windows of equal cycle counts, with the client CPU and the wall time per
 * cycle of each window. A cold loop runs in the interpreter; the curve shows how many cycles a
 * measurement must skip before it measures the optimized code a long-running service runs.
 */
import { randomUUID } from 'node:crypto';
import { lockCycle } from './allocation.js';
import { measureCpu } from './cycle-costs.js';
import type { Subject } from './subjects.js';

/** Bounds of one curve. */
export interface WarmUpOptions {
  /** Windows measured. */
  readonly windows: number;
  /** Cycles per window. */
  readonly cyclesPerWindow: number;
  /** The most time for all windows, ms: windows not reached are left out. */
  readonly maxMs: number;
}

/** One window of a curve. */
export interface WarmUpWindow {
  /** Cycles run before this window. */
  readonly cyclesBefore: number;
  readonly cycles: number;
  readonly cpuMicrosPerCycle: number;
  readonly wallMicrosPerCycle: number;
}

/** One subject's curve. */
export interface WarmUpCurve {
  readonly subject: string;
  readonly windows: readonly WarmUpWindow[];
}

/** Runs `subject` from a fresh process's cold start (the caller's process: run one subject per process). */
export async function measureWarmUp(subject: Subject, options: WarmUpOptions): Promise<WarmUpCurve> {
  const session = await subject.open();
  const cycle = lockCycle(session, `warm-up:${randomUUID()}`);
  const windows: WarmUpWindow[] = [];
  try {
    const deadline = performance.now() + options.maxMs;
    let before = 0;
    while (windows.length < options.windows && performance.now() < deadline) {
      const window = await measureCpu(cycle, options.cyclesPerWindow, deadline - performance.now());
      if (window.cycles === 0) break;
      windows.push({ cyclesBefore: before, cycles: window.cycles, cpuMicrosPerCycle: window.microsPerCycle, wallMicrosPerCycle: window.wallMicrosPerCycle });
      before += window.cycles;
    }
  } finally {
    await session.close();
  }
  return { subject: subject.id, windows };
}

/** The curves as a Markdown table (a row per window, a column pair per subject). */
export function warmUpMarkdown(curves: readonly WarmUpCurve[], command: string): string[] {
  const rows = Math.max(0, ...curves.map((curve) => curve.windows.length));
  const lines = [
    `Client CPU / wall µs per uncontended cycle, by window of cycles since the process started (\`${command}\`):`,
    '',
    `| cycles | ${curves.map((curve) => `${curve.subject} CPU | wall`).join(' | ')} |`,
    `|---|${curves.map(() => '---:|---:').join('|')}|`,
  ];
  for (let row = 0; row < rows; row += 1) {
    const first = curves.find((curve) => curve.windows[row] !== undefined)?.windows[row];
    const range = first === undefined ? '' : `${first.cyclesBefore}–${first.cyclesBefore + first.cycles}`;
    const cells = curves.map((curve) => {
      const window = curve.windows[row];
      return window === undefined ? '— | —' : `${window.cpuMicrosPerCycle.toFixed(0)} | ${window.wallMicrosPerCycle.toFixed(0)}`;
    });
    lines.push(`| ${range} | ${cells.join(' | ')} |`);
  }
  return lines;
}
