import { describe, expect, it } from 'vitest';
import { subjectById } from '../src/subjects.js';
import { measureWarmUp, warmUpMarkdown } from '../src/warm-up-curve.js';

describe('warm-up curve', () => {
  it('measures consecutive windows of cycles on the in-process provider', async () => {
    const curve = await measureWarmUp(subjectById('memory/fencelock'), { windows: 3, cyclesPerWindow: 50, maxMs: 30_000 });
    expect(curve.subject).toBe('memory/fencelock');
    expect(curve.windows.map((window) => [window.cyclesBefore, window.cycles])).toEqual([
      [0, 50],
      [50, 50],
      [100, 50],
    ]);
    for (const window of curve.windows) {
      expect(window.cpuMicrosPerCycle).toBeGreaterThan(0);
      expect(window.wallMicrosPerCycle).toBeGreaterThan(0);
    }
  });

  it('stops at its time bound', async () => {
    // A bound already spent: at most one cycle, so at most one (partial) window.
    const curve = await measureWarmUp(subjectById('memory/fencelock'), { windows: 1_000, cyclesPerWindow: 1_000_000, maxMs: 1 });
    expect(curve.windows.length).toBeLessThanOrEqual(1);
  });

  it('prints a row per window and a column pair per subject, a dash where a curve ended', () => {
    const lines = warmUpMarkdown(
      [
        { subject: 'a', windows: [{ cyclesBefore: 0, cycles: 10, cpuMicrosPerCycle: 200.4, wallMicrosPerCycle: 300.6 }, { cyclesBefore: 10, cycles: 10, cpuMicrosPerCycle: 100, wallMicrosPerCycle: 150 }] },
        { subject: 'b', windows: [{ cyclesBefore: 0, cycles: 10, cpuMicrosPerCycle: 50, wallMicrosPerCycle: 60 }] },
      ],
      'cmd',
    );
    expect(lines[2]).toBe('| cycles | a CPU | wall | b CPU | wall |');
    expect(lines.slice(4)).toEqual(['| 0–10 | 200 | 301 | 50 | 60 |', '| 10–20 | 100 | 150 | — | — |']);
  });
});
