import { describe, expect, it } from 'vitest';
import { roundOrder } from '../src/round-order.js';

// How often each ordered pair (a right before b) occurs within the rows of `rounds` rounds.
function precedence(count: number, rounds: number): Map<string, number> {
  const pairs = new Map<string, number>();
  for (let round = 0; round < rounds; round += 1) {
    const order = roundOrder(count, round);
    for (let i = 1; i < order.length; i += 1) {
      const pair = `${order[i - 1]}>${order[i]}`;
      pairs.set(pair, (pairs.get(pair) ?? 0) + 1);
    }
  }
  return pairs;
}

describe('roundOrder', () => {
  for (const count of [2, 3, 4, 5, 6]) {
    const rounds = count % 2 === 1 ? 2 * count : count;

    it(`lists each of ${count} subjects once per round`, () => {
      for (let round = 0; round < rounds + 3; round += 1) {
        expect([...roundOrder(count, round)].sort((a, b) => a - b)).toEqual(Array.from({ length: count }, (_, i) => i));
      }
    });

    it(`puts every one of ${count} subjects right after every other equally often over ${rounds} rounds`, () => {
      const pairs = precedence(count, rounds);
      // n(n-1) ordered pairs, each once (even n) or twice (odd n, a row and its mirror).
      expect(pairs.size).toBe(count * (count - 1));
      expect(new Set(pairs.values())).toEqual(new Set([count % 2 === 1 ? 2 : 1]));
    });

    it(`starts with each of ${count} subjects equally often over ${rounds} rounds`, () => {
      const firsts = Array.from({ length: rounds }, (_, round) => roundOrder(count, round)[0]);
      for (let subject = 0; subject < count; subject += 1) {
        expect(firsts.filter((first) => first === subject)).toHaveLength(rounds / count);
      }
    });
  }

  it('is not a rotation: the subject that follows another changes from round to round', () => {
    // A rotation of four (0 1 2 3, 1 2 3 0, …) has 3 right before 0 in every round.
    const before0 = [0, 1, 2, 3].map((round) => {
      const order = roundOrder(4, round);
      return order[order.indexOf(0) - 1];
    });
    expect(new Set(before0.filter((subject) => subject !== undefined)).size).toBeGreaterThan(1);
  });
});
