import { describe, expect, it } from 'vitest';
import { KeyCache } from '../src/adapter.js';

describe('KeyCache', () => {
  it('derives a key once and hands the same value to every later acquisition', () => {
    const derived: string[] = [];
    const cache = new KeyCache((key) => {
      derived.push(key);
      return { lock: `lock:${key}` };
    });
    const first = cache.get('a');
    expect(cache.get('a')).toBe(first);
    expect(cache.get('b')).toEqual({ lock: 'lock:b' });
    expect(derived).toEqual(['a', 'b']);
  });

  it('caches nothing for a key whose derivation throws: it throws again', () => {
    let calls = 0;
    const cache = new KeyCache((key) => {
      calls += 1;
      if (key.startsWith('reserved')) throw new RangeError(`${key} is reserved`);
      return key.length;
    });
    expect(() => cache.get('reserved-1')).toThrow('reserved-1 is reserved');
    expect(() => cache.get('reserved-1')).toThrow('reserved-1 is reserved');
    expect(calls).toBe(2);
  });

  it('is bounded: once full it starts again, deriving each key anew', () => {
    const derived: string[] = [];
    const cache = new KeyCache((key) => derived.push(key), 2);
    cache.get('a');
    cache.get('b');
    cache.get('a');
    expect(derived).toEqual(['a', 'b']);
    // A third key empties the cache: 'a' and 'b' are derived again when next asked for.
    cache.get('c');
    cache.get('a');
    cache.get('c');
    expect(derived).toEqual(['a', 'b', 'c', 'a']);
  });
});
