import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type PropertyId, checkHistory } from '../src/index.js';
import { type ModelCommand, MODEL_TTL_MS, simulate } from './support/lock-model.js';
import { acceptStaleWrite, dropRelease, extendAfterLoss, shiftValidUntil, swapTokens, writeAfterLoss } from './support/mutations.js';

const PROCS = 3;
const KEYS = 2;
// Bounded, and seeded through fast-check's own seed (printed on failure, replayable with `seed`).
const RUNS = { numRuns: 200 };

const command: fc.Arbitrary<ModelCommand> = fc.record({
  proc: fc.integer({ min: 0, max: PROCS - 1 }),
  key: fc.integer({ min: 0, max: KEYS - 1 }),
  action: fc.constantFrom('acquire', 'acquire', 'release', 'extend', 'write', 'write', 'stale-write', 'idle'),
  // Mostly short gaps, sometimes longer than a TTL so that leases expire under their holders.
  gapMs: fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 0, max: 30 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: Math.round(1.6 * MODEL_TTL_MS) }) },
  ),
  coin: fc.integer({ min: 0, max: 999 }).map((value) => value / 1000),
});
const workload = fc.array(command, { minLength: 10, maxLength: 80 });

const propertiesOf = (result: ReturnType<typeof checkHistory>): PropertyId[] => result.violations.map((violation) => violation.property);

describe('histories of a correct lock', () => {
  it('pass every check', () => {
    fc.assert(
      fc.property(workload, (commands) => {
        const { events, writes } = simulate(commands, PROCS, KEYS);
        const result = checkHistory(events, { fencedWrites: writes });
        expect(result.violations).toEqual([]);
        expect(result.stats.acquisitions).toBe(events.filter((event) => event.f === 'acquire' && event.type === 'ok').length);
      }),
      RUNS,
    );
  });
});

describe('mutated histories', () => {
  const mutation = (name: string, property: PropertyId, mutate: (events: ReturnType<typeof simulate>['events']) => ReturnType<typeof simulate>['events'] | undefined): void => {
    it(`${name} → ${property}`, () => {
      let applied = 0;
      fc.assert(
        fc.property(workload, (commands) => {
          const { events, writes } = simulate(commands, PROCS, KEYS);
          const mutated = mutate(events);
          fc.pre(mutated !== undefined);
          if (mutated === undefined) return;
          applied += 1;
          expect(propertiesOf(checkHistory(mutated, { fencedWrites: writes }))).toContain(property);
        }),
        RUNS,
      );
      // The mutation must have had somewhere to apply, or this case proves nothing.
      expect(applied).toBeGreaterThan(20);
    });
  };

  mutation('swapping the tokens of two holds in real-time order', 'S4', swapTokens);
  mutation('dropping a release before the next grant', 'S1', dropRelease);
  mutation('shifting a validUntil later', 'S1', shiftValidUntil);
  mutation('a library write after loss', 'S5', writeAfterLoss);
  mutation('an extension after loss', 'S6', extendAfterLoss);

  it('a stale write accepted by the store → S3', () => {
    let applied = 0;
    fc.assert(
      fc.property(workload, (commands) => {
        const { events, writes } = simulate(commands, PROCS, KEYS);
        const mutated = acceptStaleWrite(writes);
        fc.pre(mutated !== undefined);
        if (mutated === undefined) return;
        applied += 1;
        expect(propertiesOf(checkHistory(events, { fencedWrites: mutated }))).toContain('S3');
      }),
      RUNS,
    );
    expect(applied).toBeGreaterThan(20);
  });
});
