/**
 * Smoke run of the PostgreSQL subjects (src/subjects-postgres.ts) in the scenarios they run in
 * beside the other backends' (uncontended and 64 keys, interleaved); the fencelock subject's
 * contention and memory runs are in smoke.test.ts with every fencelock subject. Shapes only.
 */
import { describe, expect, it } from 'vitest';
import { runParallelKeysGroup } from '../src/parallel-keys.js';
import { computeRatios } from '../src/report.js';
import { subjects, type Subject } from '../src/subjects.js';
import { runUncontendedGroup } from '../src/uncontended.js';

const group = subjects().filter((subject) => subject.backend === 'postgres');
const rethrow = (subject: Subject, error: unknown): never => {
  throw new Error(`${subject.id} failed`, { cause: error });
};

describe('bench smoke: postgres', () => {
  it('has fencelock, the raw pg loop and advisory-lock', () => {
    expect(group.map((subject) => [subject.id, subject.kind])).toEqual([
      ['postgres/fencelock', 'fencelock'],
      ['postgres/raw-pg', 'raw'],
      ['postgres/advisory-lock', 'peer'],
    ]);
  });

  it('uncontended and 4 keys in parallel, interleaved in 2 rounds, with a ratio against both baselines', async () => {
    const uncontended = await runUncontendedGroup(group, { maxCycles: 6, maxMs: 10_000, rounds: 2, warmupCycles: 1 }, rethrow);
    expect(uncontended.map((r) => r.subject)).toEqual(group.map((s) => s.id));
    for (const result of uncontended) {
      expect(result.cycles).toBeGreaterThan(0);
      expect(result.cycles).toBeLessThanOrEqual(6);
      expect(result.roundOpsPerSec).toHaveLength(2);
    }
    const parallelKeys = await runParallelKeysGroup(group, { keys: 4, maxCyclesPerKey: 2, maxMs: 10_000, rounds: 2 }, rethrow);
    for (const result of parallelKeys) expect(result).toMatchObject({ keys: 4, cycles: 8 });
    const ratios = computeRatios(uncontended, [], parallelKeys, []).filter((ratio) => ratio.backend === 'postgres');
    expect(ratios.map((ratio) => `${ratio.scenario} / ${ratio.baselineKind}`).sort()).toEqual(
      [...new Set(ratios.map((ratio) => ratio.scenario))].flatMap((scenario) => [`${scenario} / peer`, `${scenario} / raw`]).sort(),
    );
    expect(ratios.length).toBeGreaterThanOrEqual(4);
  });
});
