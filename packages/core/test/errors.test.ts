import { describe, expect, it } from 'vitest';
import { LockError, LockErrorCode, LockRangeError, isLockError, lockLostError } from '../src/adapter.js';

describe('LockError', () => {
  it('keeps code, key, reason and cause', () => {
    const cause = new Error('socket closed');
    const error = lockLostError('jobs:42', 'expired', cause);
    expect(error).toBeInstanceOf(LockError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: 'LOCK_LOST', key: 'jobs:42', reason: 'expired', name: 'LockError' });
    expect(error.cause).toBe(cause);
    expect(error.message).toContain('"jobs:42"');
  });

  it('is recognised across copies of the package by its registry-wide mark', () => {
    // What a second copy of @fencelock/core would throw: another class, the same mark.
    const foreign = Object.assign(new Error('from another copy'), { code: 'LOCK_TIMEOUT' });
    Object.defineProperty(foreign, Symbol.for('fencelock.LockError'), { value: true });
    expect(foreign instanceof LockError).toBe(true);
    expect(isLockError(foreign, LockErrorCode.TIMEOUT)).toBe(true);
    expect(isLockError(foreign, LockErrorCode.LOST)).toBe(false);
    expect(new Error('plain') instanceof LockError).toBe(false);
    expect(isLockError({ code: 'LOCK_TIMEOUT' })).toBe(false);
  });

  it('makes argument errors both LockErrors and standard RangeErrors', () => {
    const error = new LockRangeError('options.ttlMs', 'bad');
    expect(error).toBeInstanceOf(RangeError);
    expect(error).toBeInstanceOf(LockError);
    expect(error.code).toBe('LOCK_INVALID_ARGUMENT');
  });
});
