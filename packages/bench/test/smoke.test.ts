/**
 * Smoke run of the bench so it cannot rot: every scenario function against the shared servers with
 * tiny counts. Asserts shapes and that work happened — never a figure or a wall-clock threshold
 * (the figures come only from `pnpm bench`).
 */
import { describe, expect, it } from 'vitest';
import { runContention, type ContentionResult } from '../src/contention.js';
import { runMemory, type MemoryResult } from '../src/memory.js';
import { runParallelKeys, type ParallelKeysResult } from '../src/parallel-keys.js';
import { checkTargets, computeRatios, machineInfo, renderMarkdown } from '../src/report.js';
import { subjects } from '../src/subjects.js';
import { runUncontended, type UncontendedResult } from '../src/uncontended.js';
import { runWaiters, type WaitersResult } from '../src/waiters.js';

const uncontended: UncontendedResult[] = [];
const contention: ContentionResult[] = [];
const parallelKeys: ParallelKeysResult[] = [];
const memory: MemoryResult[] = [];
const waiters: WaitersResult[] = [];

describe('bench smoke', () => {
  for (const subject of subjects()) {
    it(`uncontended: ${subject.id}`, async () => {
      const result = await runUncontended(subject, { maxCycles: 5, maxMs: 5_000, warmupCycles: 1 });
      expect(result).toMatchObject({ subject: subject.id, backend: subject.backend, kind: subject.kind, label: subject.label });
      expect(result.cycles).toBeGreaterThan(0);
      expect(result.cycles).toBeLessThanOrEqual(5);
      expect(result.opsPerSec).toBeGreaterThan(0);
      expect(result.p50Ms).toBeGreaterThanOrEqual(0);
      expect(result.p99Ms).toBeGreaterThanOrEqual(result.p50Ms);
      uncontended.push(result);
    });
  }

  for (const subject of subjects()) {
    it(`4 keys in parallel: ${subject.id}`, async () => {
      const result = await runParallelKeys(subject, { keys: 4, maxCyclesPerKey: 2, maxMs: 5_000 });
      expect(result).toMatchObject({ subject: subject.id, keys: 4 });
      expect(result.cycles).toBeGreaterThan(0);
      expect(result.cycles).toBeLessThanOrEqual(8);
      expect(result.opsPerSec).toBeGreaterThan(0);
      parallelKeys.push(result);
    });
  }

  for (const subject of subjects().filter((s) => s.kind === 'fencelock')) {
    it(`contention (2 processes): ${subject.id}`, async () => {
      const result = await runContention(subject, { clients: 2, maxMs: 1_500, maxAcquisitionsPerClient: 5, waitMs: 1_500 });
      expect(result).toMatchObject({ subject: subject.id, clients: 2 });
      expect(result.acquisitions).toBeGreaterThan(0);
      expect(result.acquisitions).toBeLessThanOrEqual(10);
      expect(result.acquisitionsPerSec).toBeGreaterThan(0);
      expect(result.perClient).toHaveLength(2);
      expect(result.perClient.reduce((a, b) => a + b, 0)).toBe(result.acquisitions);
      expect(result.differentClientShare).toBeGreaterThanOrEqual(0);
      expect(result.differentClientShare).toBeLessThanOrEqual(1);
      expect(result.waiterWinShare).toBeGreaterThanOrEqual(0);
      expect(result.waiterWinShare).toBeLessThanOrEqual(1);
      expect(result.handoffs).toBeLessThanOrEqual(result.acquisitions);
      contention.push(result);
    });
  }

  for (const subject of subjects().filter((s) => s.kind === 'fencelock')) {
    it(`memory: ${subject.id}`, async () => {
      const result = await runMemory(subject, { maxCycles: 5, maxMs: 5_000, warmupCycles: 1 });
      expect(result).toMatchObject({ subject: subject.id });
      expect(result.cycles).toBeGreaterThan(0);
      expect(result.cycles).toBeLessThanOrEqual(5);
      expect(result.heapBeforeBytes).toBeGreaterThan(0);
      expect(result.heapAfterBytes).toBeGreaterThan(0);
      memory.push(result);
    });
  }

  for (const subject of subjects().filter((s) => s.kind === 'fencelock')) {
    it(`3 waiters: ${subject.id}`, async () => {
      const result = await runWaiters(subject, { waiters: 3, waitMs: 10_000, settleMs: 100 });
      expect(result).toMatchObject({ subject: subject.id, waiters: 3, granted: 3 });
      expect(result.drainPerSec).toBeGreaterThan(0);
      waiters.push(result);
    });
  }

  it('renders ratios and the markdown from the results', () => {
    const ratios = computeRatios(uncontended, contention, parallelKeys);
    expect(ratios.length).toBeGreaterThan(0);
    for (const ratio of ratios) expect(Number.isFinite(ratio.ratio)).toBe(true);
    const targets = checkTargets(uncontended, contention);
    expect(targets.length).toBeGreaterThan(0);
    for (const target of targets) expect(typeof target.met).toBe('boolean');
    const markdown = renderMarkdown({
      startedAt: new Date(0).toISOString(),
      machine: machineInfo(),
      settings: { secondsPerMeasurement: 1 },
      uncontended,
      parallelKeys,
      contention,
      waiters,
      memory,
      ratios,
      targets,
      errors: {},
    });
    expect(markdown).toContain('## Ratios (headline)');
    expect(markdown).toContain('## Targets (issue 7) in this run');
    expect(markdown).toContain('## 4. Memory');
    expect(markdown).toContain('## 3b. 100 waiters');
    expect(ratios.some((ratio) => ratio.scenario === '64 keys ops/s')).toBe(true);
    for (const result of uncontended) expect(markdown).toContain(result.label);
  });
});
