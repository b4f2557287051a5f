import { describe, expect, it } from 'vitest';
import { measureInThisProcess, spreadMarkdown, summarizeSpread, type SubjectCosts } from '../src/process-spread.js';
import { subjectById } from '../src/subjects.js';

const costs = (subject: string, cpuMicros: number, wallMicros: number, cycles = 100): SubjectCosts => ({ subject, cpuMicros, wallMicros, cycles });

describe('process spread', () => {
  it('measures every subject in interleaved rounds in this process', async () => {
    const measured = await measureInThisProcess([subjectById('memory/fencelock'), subjectById('memory/async-mutex')], {
      rounds: 3,
      cyclesPerRound: 40,
      warmupCycles: 20,
      maxSliceMs: 30_000,
    });
    expect(measured.map((cost) => [cost.subject, cost.cycles])).toEqual([
      ['memory/fencelock', 120],
      ['memory/async-mutex', 120],
    ]);
    for (const cost of measured) {
      expect(cost.wallMicros).toBeGreaterThan(0);
      expect(cost.cpuMicros).toBeGreaterThanOrEqual(0);
    }
  });

  it('sets the first subject against each other one, process by process', () => {
    const summary = summarizeSpread([
      [costs('ours', 90, 100), costs('twin', 100, 110), costs('peer', 80, 95)],
      [costs('ours', 110, 120), costs('twin', 100, 108)],
      // A process where ours measured nothing counts for no row.
      [costs('ours', 1, 1, 0), costs('twin', 100, 100)],
    ]);
    expect(summary.ours).toBe('ours');
    expect(summary.processes).toBe(3);
    const twin = summary.rows.find((row) => row.subject === 'twin');
    expect(twin?.cpuRatios).toEqual([0.9, 1.1]);
    expect(twin?.throughputRatios).toEqual([1.1, 0.9]);
    const peer = summary.rows.find((row) => row.subject === 'peer');
    expect(peer?.cpuRatios).toEqual([90 / 80]);
    expect(peer?.throughputRatios).toEqual([0.95]);
    const lines = spreadMarkdown(summary, 'cmd');
    expect(lines[0]).toContain('3 processes; command: `cmd`');
    expect(lines).toContain('| twin | 1.10 0.90 | 0.90–1.10 | 1.00 | 0.90 1.10 | 0.90–1.10 | 1.00 |');
    expect(lines).toContain('| peer | 0.95 | 0.95–0.95 | 0.95 | 1.13 | 1.13–1.13 | 1.13 |');
  });
});
