import { describe, expect, it } from 'vitest';
import { FencingGuard, type FenceRejection } from '../src/adapter.js';

describe('FencingGuard', () => {
  it('accepts equal or newer tokens per key, refuses older ones, and counts', () => {
    const guard = new FencingGuard();
    const rejected: FenceRejection[] = [];
    guard.onReject((r) => rejected.push(r));
    expect(guard.check('file', 5n)).toBe(true);
    expect(guard.check('file', 5n)).toBe(true);
    expect(guard.check('file', 4n)).toBe(false);
    expect(guard.check('other', 1n)).toBe(true);
    expect(guard.check('file', 9n)).toBe(true);
    expect(guard.highestToken('file')).toBe(9n);
    expect(guard.stats).toEqual({ accepted: 4, rejected: 1 });
    expect(rejected).toEqual([{ key: 'file', token: 4n, highestToken: 5n }]);
  });

  it('throws LOCK_STALE_TOKEN from assert, and refuses writes without a token', () => {
    const guard = new FencingGuard();
    guard.assert('k', 2n);
    expect(() => guard.assert('k', 1n)).toThrow(expect.objectContaining({ code: 'LOCK_STALE_TOKEN', key: 'k' }));
    expect(() => guard.check('k', undefined)).toThrow(TypeError);
  });

  it('treats __proto__ as an ordinary key', () => {
    const guard = new FencingGuard();
    expect(guard.check('__proto__', 3n)).toBe(true);
    expect(guard.check('__proto__', 2n)).toBe(false);
    expect(guard.highestToken('constructor')).toBeUndefined();
  });
});
