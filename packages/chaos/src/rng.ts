/**
 * A small seeded PRNG (mulberry32) for the workload and the nemesis: the same seed gives the same
 * sequence of choices, so a failing run can be replayed with `--seed`. (Wall-clock races between
 * processes still differ between replays; the schedule and every client's choices do not.)
 */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** A float in [min, max). */
  between(min: number, max: number): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** `k` distinct elements of `items` (k ≤ length), in random order. */
  sample<T>(items: readonly T[], k: number): T[];
  /** A new independent stream derived from this seed and `label` (one per client, one for the nemesis). */
  fork(label: string): Rng;
  readonly seed: number;
}

/** A 32-bit FNV-1a hash, to derive sub-seeds from labels. */
function hash32(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Creates a seeded generator. `seed` is taken modulo 2^32. */
export function createRng(seed: number): Rng {
  const base = seed >>> 0;
  let state = base;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4_294_967_296;
  };
  const rng: Rng = {
    seed: base,
    next,
    between: (min, max) => min + next() * (max - min),
    int: (n) => Math.floor(next() * n),
    pick: (items) => {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)] as (typeof items)[number];
    },
    sample: (items, k) => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i -= 1) {
        const j = Math.floor(next() * (i + 1));
        [copy[i], copy[j]] = [copy[j] as (typeof copy)[number], copy[i] as (typeof copy)[number]];
      }
      return copy.slice(0, Math.min(k, copy.length));
    },
    fork: (label) => createRng(hash32(label, base)),
  };
  return rng;
}

/** A fresh random seed (printed by every run so that it can be replayed). */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
