import { describe, expect, it } from 'vitest';
import {
  LockError,
  LockRangeError,
  LockTypeError,
  MAX_DURATION_MS,
  MAX_KEY_BYTES,
  normalizeAcquireOptions,
  normalizeCapabilities,
  validateKey,
  validateTtlMs,
  validateWaitMs,
  type AcquireOptions,
} from '../src/adapter.js';

const caps = normalizeCapabilities({ fencing: 'global', extend: true, readWrite: false });
const etcdLike = normalizeCapabilities({ fencing: 'global', ttlResolutionMs: 1000, minTtlMs: 2000 });
const sessionCaps = normalizeCapabilities({ fencing: 'global', expiry: 'session', readWrite: true });
const context = { capabilities: caps, defaultTtlMs: 30_000, defaultWaitMs: 30_000, tryOnce: false };

describe('validateKey', () => {
  it.each([1, undefined, null, {}, Symbol('s'), Buffer.from('k'), ['k'], 1n])('refuses %s with a TypeError, without coercion', (key) => {
    const error = (() => {
      try {
        validateKey(key);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(LockTypeError);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toBeInstanceOf(LockError);
    expect(error).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT', argument: 'key' });
  });

  it.each([
    [undefined, 'key must be a string, got undefined'],
    [null, 'key must be a string, got null'],
    [42, 'key must be a string, got the number 42'],
    [true, 'key must be a string, got the boolean true'],
    [() => 'k', 'key must be a string, got a function'],
  ])('names what it got in plain words: %s', (key, message) => {
    expect(() => validateKey(key)).toThrow(message);
  });

  it.each(['', '\uD800', '\uDBFF', 'x'.repeat(MAX_KEY_BYTES + 1), 'é'.repeat(MAX_KEY_BYTES / 2 + 1)])(
    'refuses an empty, ill-formed or oversized key with a RangeError',
    (key) => {
      expect(() => validateKey(key)).toThrow(LockRangeError);
    },
  );

  it('accepts keys byte for byte: no trimming, case folding or normalisation', () => {
    for (const key of [' a', 'A', 'a', 'é', 'e\u0301', '__proto__', 'a\u0000b', '..', 'x'.repeat(MAX_KEY_BYTES)]) {
      expect(validateKey(key)).toBe(key);
    }
  });
});

describe('durations', () => {
  it('rounds TTLs up to the backend resolution and refuses those below its floor', () => {
    expect(validateTtlMs(1.2, caps)).toBe(2);
    expect(validateTtlMs(2500, etcdLike)).toBe(3000);
    expect(() => validateTtlMs(1999, etcdLike)).toThrow(LockRangeError);
    expect(() => validateTtlMs(MAX_DURATION_MS, etcdLike)).toThrow(LockRangeError);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, MAX_DURATION_MS + 1])('refuses TTL %s with a RangeError', (ttl) => {
    expect(() => validateTtlMs(ttl, caps)).toThrow(LockRangeError);
  });

  it.each(['1000', 1000n, null])('refuses TTL %s of the wrong type with a TypeError', (ttl) => {
    expect(() => validateTtlMs(ttl, caps)).toThrow(LockTypeError);
  });

  it('accepts a wait of 0 (try once) and Infinity, and refuses negatives and NaN', () => {
    expect(validateWaitMs(0)).toBe(0);
    expect(validateWaitMs(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(validateWaitMs(10.5)).toBe(11);
    expect(() => validateWaitMs(-1)).toThrow(LockRangeError);
    expect(() => validateWaitMs(Number.NaN)).toThrow(LockRangeError);
    expect(() => validateWaitMs(MAX_DURATION_MS + 1)).toThrow(LockRangeError);
  });
});

describe('normalizeAcquireOptions', () => {
  it('fills in defaults', () => {
    expect(normalizeAcquireOptions('k', undefined, context)).toEqual({
      ttlMs: 30_000,
      waitMs: 30_000,
      signal: undefined,
      mode: 'exclusive',
      autoExtend: true,
      maxHoldMs: undefined,
      metadata: undefined,
    });
  });

  it('refuses shared mode without readWrite, and ttlMs or autoExtend:false on session providers, as LOCK_UNSUPPORTED', () => {
    expect(() => normalizeAcquireOptions('k', { mode: 'shared' }, context)).toThrow(expect.objectContaining({ code: 'LOCK_UNSUPPORTED' }));
    const session = { ...context, capabilities: sessionCaps };
    expect(() => normalizeAcquireOptions('k', { ttlMs: 1000 }, session)).toThrow(expect.objectContaining({ code: 'LOCK_UNSUPPORTED' }));
    expect(() => normalizeAcquireOptions('k', { autoExtend: false }, session)).toThrow(expect.objectContaining({ code: 'LOCK_UNSUPPORTED' }));
    expect(normalizeAcquireOptions('k', { mode: 'shared' }, session).mode).toBe('shared');
  });

  it('turns autoExtend off where the provider cannot extend', () => {
    const noExtend = { ...context, capabilities: normalizeCapabilities({ fencing: 'none' }) };
    expect(normalizeAcquireOptions('k', {}, noExtend).autoExtend).toBe(false);
  });

  it('refuses unknown options, and waitMs on a single try', () => {
    expect(() => normalizeAcquireOptions('k', { ttl: 5 } as never, context)).toThrow(LockTypeError);
    expect(() => normalizeAcquireOptions('k', { waitMs: 5 } as never, { ...context, tryOnce: true })).toThrow(LockTypeError);
    expect(normalizeAcquireOptions('k', {}, { ...context, tryOnce: true }).waitMs).toBe(0);
  });

  it('reads options spread from defaults, options without a prototype, and options a class provides by getters', () => {
    const defaults = { ttlMs: 1_000, autoExtend: false };
    expect(normalizeAcquireOptions('k', { ...defaults, waitMs: 50 }, context)).toMatchObject({ ttlMs: 1_000, waitMs: 50, autoExtend: false });
    expect(() => normalizeAcquireOptions('k', { ...defaults, ttl: 5 } as never, context)).toThrow(LockTypeError);
    const bare: AcquireOptions = Object.assign(Object.create(null) as object, { ttlMs: 2_000, mode: 'exclusive' as const });
    expect(normalizeAcquireOptions('k', bare, context)).toMatchObject({ ttlMs: 2_000, mode: 'exclusive' });
    class Options {
      get ttlMs(): number {
        return 3_000;
      }
      get waitMs(): number {
        return 7;
      }
    }
    expect(normalizeAcquireOptions('k', new Options(), context)).toMatchObject({ ttlMs: 3_000, waitMs: 7 });
    const hidden = Object.defineProperty({ waitMs: 9 }, 'ttlMs', { value: 4_000, enumerable: false });
    expect(normalizeAcquireOptions('k', hidden, context)).toMatchObject({ ttlMs: 4_000, waitMs: 9 });
    // A bad value is refused whichever way it is given.
    expect(() => normalizeAcquireOptions('k', { ...defaults, ttlMs: -1 }, context)).toThrow(LockRangeError);
  });

  it('refuses an aborted signal with LOCK_ABORTED, keeping the reason as cause', () => {
    const reason = new Error('stop');
    const error = (() => {
      try {
        normalizeAcquireOptions('k', { signal: AbortSignal.abort(reason) }, context);
      } catch (e) {
        return e as LockError;
      }
      return undefined;
    })();
    expect(error).toMatchObject({ code: 'LOCK_ABORTED', name: 'AbortError', key: 'k' });
    expect(error?.cause).toBe(reason);
  });
});

describe('normalizeCapabilities', () => {
  it('fills safe defaults, freezes, and refuses nonsense', () => {
    const filled = normalizeCapabilities({ fencing: 'none' });
    expect(filled).toEqual({
      fencing: 'none',
      lossDetection: false,
      extend: false,
      notify: false,
      fifo: false,
      readWrite: false,
      expiry: 'per-lock',
      ttlResolutionMs: 1,
      minTtlMs: 1,
      deletionNotice: 'validity',
      semaphore: 'none',
      election: 'none',
    });
    expect(Object.isFrozen(filled)).toBe(true);
    expect(() => normalizeCapabilities({ fencing: 'none', semaphore: 'many' as never })).toThrow(LockTypeError);
    expect(() => normalizeCapabilities({ fencing: 'none', election: 'pushed' as never })).toThrow(LockTypeError);
    expect(normalizeCapabilities({ fencing: 'none', election: 'polled' }).election).toBe('polled');
    expect(() => normalizeCapabilities({ fencing: 'none', deletionNotice: 'never' as never })).toThrow(LockTypeError);
    expect(() => normalizeCapabilities({ fencing: 'strong' as never })).toThrow(LockTypeError);
    expect(() => normalizeCapabilities({ fencing: 'none', minTtlMs: 0 })).toThrow(LockTypeError);
  });
});
