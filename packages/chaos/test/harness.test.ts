import { describe, expect, it } from 'vitest';
import { BACKEND_NAMES, hasElections, hasSemaphores } from '../src/backends.js';
import { createRng } from '../src/rng.js';
import { QUICK_PROFILE, SCENARIOS, SEMAPHORE_ROW_LIMIT, scenario } from '../src/scenarios.js';
import { runSeed } from '../src/soak.js';

describe('seeded randomness', () => {
  it('replays the same sequence for the same seed, and forks independent streams', () => {
    const draw = (seed: number) => {
      const rng = createRng(seed);
      return [rng.next(), rng.int(10), rng.between(5, 6), rng.pick(['a', 'b', 'c']), rng.sample([1, 2, 3, 4, 5], 2), rng.fork('c1').next()];
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
    expect(createRng(1).fork('c1').next()).not.toBe(createRng(1).fork('c2').next());
    for (const value of Array.from({ length: 1_000 }, createRng(7).next)) expect(value >= 0 && value < 1).toBe(true);
  });

  it('derives run seeds from the soak seed, the backend and the fault only', () => {
    expect(runSeed(5, 'redis', 'F2')).toBe(runSeed(5, 'redis', 'F2'));
    expect(runSeed(5, 'redis', 'F2')).not.toBe(runSeed(5, 'etcd', 'F2'));
  });
});

describe('fault catalogue', () => {
  it('has every quick-profile fault in the soak, and a negative control for Redis and Redlock', () => {
    for (const backend of BACKEND_NAMES) {
      for (const id of QUICK_PROFILE[backend]) expect(scenario(backend, id).id).toBe(id);
      expect(new Set(SCENARIOS[backend].map((s) => s.id)).size).toBe(SCENARIOS[backend].length);
    }
    expect(scenario('redis', 'F10').expectViolation).toBe(true);
    expect(scenario('redlock', 'F16').expectViolation).toBe(true);
    expect(SCENARIOS.etcd.some((s) => s.expectViolation === true)).toBe(false);
    expect(() => scenario('etcd', 'F10')).toThrow(RangeError);
  });
});

describe('semaphore (S7) rows', () => {
  it('repeat every safe fault on a semaphore exactly for the backends whose adapter declares semaphores, in the quick profile too', () => {
    for (const backend of BACKEND_NAMES) {
      const mutexRows = SCENARIOS[backend].filter((row) => row.workload?.semaphoreLimit === undefined && row.workload?.election === undefined);
      const semaphoreRows = SCENARIOS[backend].filter((row) => row.workload?.semaphoreLimit !== undefined);
      const expected = hasSemaphores(backend) ? mutexRows.filter((row) => row.expectViolation !== true).map((row) => `${row.id}-S7`) : [];
      expect(semaphoreRows.map((row) => row.id)).toEqual(expected);
      for (const row of semaphoreRows) {
        expect(row.workload?.semaphoreLimit).toBe(SEMAPHORE_ROW_LIMIT);
        expect(row.expectViolation).not.toBe(true);
        // The same injection as the mutex row.
        expect(row.inject).toBe(scenario(backend, row.id.replace(/-S7$/, '')).inject);
      }
      expect(QUICK_PROFILE[backend].includes('F2-S7')).toBe(hasSemaphores(backend));
    }
    expect(hasSemaphores('redis')).toBe(true);
    expect(hasSemaphores('redlock')).toBe(false);
  });
});

describe('election (S8) rows', () => {
  it('repeat every safe fault as leaderships exactly for the backends whose adapter declares elections, in the quick profile too', () => {
    for (const backend of BACKEND_NAMES) {
      const mutexRows = SCENARIOS[backend].filter((row) => row.workload?.semaphoreLimit === undefined && row.workload?.election === undefined);
      const electionRows = SCENARIOS[backend].filter((row) => row.workload?.election === true);
      const expected = hasElections(backend) ? mutexRows.map((row) => `${row.id}-S8`) : [];
      expect(electionRows.map((row) => row.id)).toEqual(expected);
      for (const row of electionRows) {
        const base = scenario(backend, row.id.replace(/-S8$/, ''));
        expect(row.keys).toBe(1);
        expect(row.workload?.semaphoreLimit).toBeUndefined();
        // A negative control stays one.
        expect(row.expectViolation).toBe(base.expectViolation);
        expect(row.inject).toBe(base.inject);
      }
      expect(QUICK_PROFILE[backend].includes('F2-S8')).toBe(hasElections(backend));
    }
    expect(QUICK_PROFILE.redis.includes('F10-S8')).toBe(true);
    // Every backend the suite drives has elections today; Redlock's have no terms.
    for (const backend of BACKEND_NAMES) expect(hasElections(backend)).toBe(true);
  });
});
