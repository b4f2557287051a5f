import { describe, expect, it } from 'vitest';
import { balancedRounds, measuringPlan } from '../src/measuring-plan.js';
import { roundOrder } from '../src/round-order.js';

// How often each subject is first, and each ordered pair (a right before b) occurs, over `rounds` rounds.
function tally(count: number, rounds: number): { firsts: number[]; pairs: Map<string, number> } {
  const firsts = Array.from({ length: count }, () => 0);
  const pairs = new Map<string, number>();
  for (let round = 0; round < rounds; round += 1) {
    const order = roundOrder(count, round);
    firsts[order[0] ?? 0] = (firsts[order[0] ?? 0] ?? 0) + 1;
    for (let i = 1; i < order.length; i += 1) pairs.set(`${order[i - 1]}>${order[i]}`, (pairs.get(`${order[i - 1]}>${order[i]}`) ?? 0) + 1);
  }
  return { firsts, pairs };
}

describe('balancedRounds', () => {
  for (const subjects of [2, 3, 4, 5, 6]) {
    for (const asked of [1, 5, 10, 13]) {
      it(`gives ${subjects} subjects at least ${asked} rounds, in which the order is balanced`, () => {
        const rounds = balancedRounds(asked, subjects);
        expect(rounds).toBeGreaterThanOrEqual(asked);
        const { firsts, pairs } = tally(subjects, rounds);
        expect(new Set(firsts).size).toBe(1);
        expect(pairs.size).toBe(subjects * (subjects - 1));
        expect(new Set(pairs.values()).size).toBe(1);
      });
    }
  }

  it('takes the fewest such rounds', () => {
    expect(balancedRounds(5, 3)).toBe(6);
    expect(balancedRounds(5, 4)).toBe(8);
    expect(balancedRounds(5, 5)).toBe(10);
    expect(balancedRounds(10, 4)).toBe(12);
    expect(balancedRounds(5, 1)).toBe(5);
  });
});

describe('measuringPlan', () => {
  it('keeps the run’s time for a backend whose cycles are short, and balances its rounds', () => {
    expect(measuringPlan('redis', 5, 3_000, 5)).toEqual({ maxMs: 3_000, rounds: 10 });
    expect(measuringPlan('memory', 2, 3_000, 5)).toEqual({ maxMs: 3_000, rounds: 6 });
  });

  it('gives ZooKeeper and etcd, whose cycles are quorum writes, four times the time in twice the rounds', () => {
    expect(measuringPlan('zookeeper', 3, 3_000, 5)).toEqual({ maxMs: 12_000, rounds: 12 });
    expect(measuringPlan('etcd', 4, 3_000, 5)).toEqual({ maxMs: 12_000, rounds: 12 });
  });
});
