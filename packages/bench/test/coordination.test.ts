/**
 * Smoke run of the semaphores-and-elections section so it cannot rot: every group against the
 * shared servers with tiny counts. Asserts shapes, that work happened and that no loop saw more
 * holders than the limit at once — never a figure or a wall-clock threshold.
 */
import { describe, expect, it } from 'vitest';
import { coordinationMarkdown, runCoordination } from '../src/coordination.js';
import { sharedAddresses } from '../src/bench-servers.js';
import { coordinationGroups } from '../src/subjects-coordination.js';
import type { Subject } from '../src/subjects.js';

const rethrow = (subject: Subject, error: unknown): never => {
  throw new Error(`${subject.id} failed`, { cause: error });
};

describe('coordination section smoke', () => {
  for (const group of coordinationGroups(sharedAddresses())) {
    it(`${group.primitive} on ${group.backend}: every subject measured, never more holders than the limit`, async () => {
      const [result] = await runCoordination([group], { maxCycles: 16, maxMs: 4_000, rounds: 2, warmupCycles: 1 }, rethrow);
      expect(result?.subjects.map((s) => s.subject)).toEqual(group.subjects.map((s) => s.id));
      for (const subject of result?.subjects ?? []) {
        expect(subject.uncontended?.cycles).toBeGreaterThan(0);
        expect(subject.contended?.cycles).toBeGreaterThan(0);
        expect(subject.contended?.mostHolders).toBeGreaterThanOrEqual(1);
        expect(subject.contended?.mostHolders).toBeLessThanOrEqual(group.limit);
        expect(subject.contended?.failures).toBe(0);
        if (subject.kind === 'peer') expect(subject.uncontendedRatio).toBeGreaterThan(0);
      }
      const table = coordinationMarkdown([result!], 'pnpm bench').join('\n');
      for (const subject of group.subjects) expect(table).toContain(subject.label);
    });
  }
});
