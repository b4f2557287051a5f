import { describe, expect, it } from 'vitest';
import { idFilter, nonNegativeSetting, positiveSetting } from '../src/cli-env.js';

describe('the bench settings from the environment', () => {
  it('reads a number, and takes the fallback when the variable is unset', () => {
    expect(positiveSetting('BENCH_SECONDS', 3, { BENCH_SECONDS: '0.5' })).toBe(0.5);
    expect(positiveSetting('BENCH_SECONDS', 3, {})).toBe(3);
    expect(nonNegativeSetting('BENCH_HOGS', 2, { BENCH_HOGS: '0' })).toBe(0);
  });

  it('refuses a value that is not a number in range, naming the variable', () => {
    expect(() => positiveSetting('BENCH_SECONDS', 3, { BENCH_SECONDS: '0' })).toThrow(/^BENCH_SECONDS must be a positive number$/);
    expect(() => positiveSetting('BENCH_SECONDS', 3, { BENCH_SECONDS: 'three' })).toThrow(RangeError);
    expect(() => nonNegativeSetting('BENCH_HOGS', 0, { BENCH_HOGS: '-1' })).toThrow(/^BENCH_HOGS must be a non-negative number$/);
    expect(() => nonNegativeSetting('BENCH_HOGS', 0, { BENCH_HOGS: 'Infinity' })).toThrow(RangeError);
  });

  it('keeps the ids that contain one of the listed parts, and every id when none is listed', () => {
    const only = idFilter('BENCH_ONLY', { BENCH_ONLY: 'redis/,memory/' });
    expect(only.all).toBe(false);
    expect(only.matches('redis/fencelock')).toBe(true);
    expect(only.matches('etcd/fencelock')).toBe(false);
    expect(only.matches('etcd/fencelock', 'memory/async-mutex')).toBe(true);
    for (const unset of [{}, { BENCH_ONLY: '' }, { BENCH_ONLY: ',' }]) {
      const every = idFilter('BENCH_ONLY', unset);
      expect(every.all).toBe(true);
      expect(every.matches('etcd/fencelock')).toBe(true);
    }
  });
});
