import { describe, expect, it } from 'vitest';
import { performanceTargets, performanceTargetsMarkdown } from '../src/performance-targets.js';
import { subjectById } from '../src/subjects.js';
import {
  measureInChildProcess,
  mergeProcessReports,
  perProcessRatios,
  runSectionInProcesses,
  shareOf,
  type ProcessReport,
  type SectionRequest,
} from '../src/throughput-processes.js';

const MEMORY = [subjectById('memory/fencelock'), subjectById('memory/async-mutex')];

const report = (measurements: ProcessReport['measurements'], errors: ProcessReport['errors'] = []): ProcessReport => ({ type: 'measured', pid: 1, measurements, errors });
const slices = (subject: string, roundOpsPerSec: number[], samples = [1, 2]) => ({ subject, samples, roundOpsPerSec, seconds: 0.5 });

describe('throughput measured in several processes', () => {
  it('gives each process a share of the time, and every round, the whole warm-up and the whole bound on cycles per slice', () => {
    const uncontended = shareOf({ section: 'uncontended', subjects: ['a'], options: { maxMs: 3_000, maxCycles: 20_000, rounds: 6, warmupCycles: 2_000 } }, 3);
    expect(uncontended.options).toEqual({ maxMs: 1_000, maxCycles: 20_000, rounds: 6, warmupCycles: 2_000 });
    const parallel = shareOf({ section: 'parallel-keys', subjects: ['a'], options: { keys: 64, maxMs: 12_000, maxCyclesPerKey: 20_000, rounds: 12 } }, 4);
    expect(parallel.options).toEqual({ keys: 64, maxMs: 3_000, maxCyclesPerKey: 20_000, rounds: 12 });
  });

  it("keeps round i of one subject beside round i of another, process by process, and counts a process's missing slices as 0 ops/s", () => {
    const merged = mergeProcessReports(MEMORY, [
      report([slices('memory/fencelock', [10, 20]), slices('memory/async-mutex', [30, 40])]),
      // The first subject failed after one slice in this process, the second ran both.
      report([slices('memory/fencelock', [50], [3]), slices('memory/async-mutex', [60, 70])]),
      // A process where only the second subject measured anything.
      report([slices('memory/async-mutex', [80, 90])]),
    ], 2);
    expect(merged.map((m) => [m.subject.id, m.roundOpsPerSec, m.samples, m.seconds])).toEqual([
      ['memory/fencelock', [10, 20, 50, 0, 0, 0], [1, 2, 3], 1],
      ['memory/async-mutex', [30, 40, 60, 70, 80, 90], [1, 2, 1, 2, 1, 2], 1.5],
    ]);
    // A subject with no cycle anywhere is left out.
    expect(mergeProcessReports(MEMORY, [report([slices('memory/async-mutex', [1])])], 1).map((m) => m.subject.id)).toEqual(['memory/async-mutex']);
  });

  it("gives each process's own ratio: the median of its rounds' ratios", () => {
    const ours = { roundOpsPerSec: [90, 100, 110, 120, 130, 140], processes: 2 };
    const theirs = { roundOpsPerSec: [100, 100, 100, 100, 100, 100], processes: 2 };
    expect(perProcessRatios(ours, theirs)).toEqual([1, 1.3]);
    // One process, or blocks that do not match: nothing to show per process.
    expect(perProcessRatios({ ...ours, processes: 1 }, { ...theirs, processes: 1 })).toEqual([]);
    expect(perProcessRatios(ours, { roundOpsPerSec: [100, 100, 100], processes: 2 })).toEqual([]);
  });

  it("reports a failure inside a process and a failed process through onError, and still counts the other processes", async () => {
    const failures: string[] = [];
    const asked: SectionRequest[] = [];
    let call = 0;
    const results = await runSectionInProcesses(
      { section: 'uncontended', subjects: MEMORY.map((s) => s.id), options: { maxMs: 900, maxCycles: 300, rounds: 2 } },
      MEMORY,
      3,
      (subject, error) => failures.push(`${subject.id}: ${error instanceof Error ? error.message : String(error)}`),
      async (request) => {
        asked.push(request);
        call += 1;
        if (call === 2) throw new Error('the process exited (1) before it');
        if (call === 3) return report([slices('memory/fencelock', [5, 6]), slices('memory/async-mutex', [7, 8])], [{ subject: 'memory/async-mutex', error: 'slow' }]);
        return report([slices('memory/fencelock', [1, 2]), slices('memory/async-mutex', [3, 4])]);
      },
    );
    expect(asked.map((r) => r.options)).toEqual(Array(3).fill({ maxMs: 300, maxCycles: 300, rounds: 2 }));
    expect(failures).toEqual([
      'memory/fencelock: process 2 of 3: the process exited (1) before it',
      'memory/async-mutex: process 2 of 3: the process exited (1) before it',
      'memory/async-mutex: process 3 of 3: slow',
    ]);
    expect(results.map((r) => [r.subject, r.processes, r.roundOpsPerSec])).toEqual([
      ['memory/fencelock', 2, [1, 2, 5, 6]],
      ['memory/async-mutex', 2, [3, 4, 7, 8]],
    ]);
  });

  it('measures each share in a process of its own and merges their rounds', async () => {
    const pids: number[] = [];
    const results = await runSectionInProcesses(
      { section: 'parallel-keys', subjects: MEMORY.map((s) => s.id), options: { keys: 4, maxMs: 60_000, maxCyclesPerKey: 30, rounds: 2 } },
      MEMORY,
      2,
      (subject, error) => {
        throw new Error(`${subject.id}: ${String(error)}`);
      },
      async (request) => {
        const measured = await measureInChildProcess(request);
        pids.push(measured.pid);
        return measured;
      },
    );
    expect(new Set(pids).size).toBe(2);
    expect(pids).not.toContain(process.pid);
    // Per process: 2 rounds of 4 keys × 15 cycles each (30 per key, over 2 rounds, in each process).
    expect(results.map((r) => [r.subject, r.keys, r.processes, r.roundOpsPerSec.length, r.cycles])).toEqual([
      ['memory/fencelock', 4, 2, 4, 240],
      ['memory/async-mutex', 4, 2, 4, 240],
    ]);
    for (const result of results) for (const opsPerSec of result.roundOpsPerSec) expect(opsPerSec).toBeGreaterThan(0);
  }, 120_000);

  it("shows each process's own ratio beside a target's", () => {
    const rows = (ours: number[]) =>
      ['redis/fencelock', 'redis/node-redlock'].map((subject) => ({ subject, opsPerSec: 100, roundOpsPerSec: subject === 'redis/fencelock' ? ours : [100, 100, 100, 100], processes: 2 }));
    const targets = performanceTargets({ uncontended: rows([94, 96, 104, 106]), parallelKeys: [], waiters: [] });
    const target = targets.find((t) => t.id === 'uncontended:redis/fencelock:redis/node-redlock');
    expect(target?.measured).toBe(1);
    expect(target?.perProcess).toEqual([0.95, 1.05]);
    const lines = performanceTargetsMarkdown(targets, { startedAt: '2026-12-02T00:00:00Z', machine: { cpu: 'Test CPU', cores: 2 } }, []);
    expect(lines.find((line) => line.startsWith('| Redis uncontended ≥ 1.00 × node-redlock'))).toContain('1 met (per process 0.95 / 1.05)');
  });
});
