/** The pure parts: majority, drift and validity arithmetic, endpoint identity, the stored value. */
import { describe, expect, it } from 'vitest';
import { endpointOfUrl, normalizeEndpoint } from '../src/endpoints.js';
import { decodeLockValue, encodeLockValue } from '../src/lock-value.js';
import { nodeTimeoutFor } from '../src/options.js';
import { driftMarginMs, quorumOf, remainingValidityMs } from '../src/quorum.js';

describe('quorum and validity', () => {
  it('a majority is ⌊N/2⌋ + 1', () => {
    expect([3, 5, 7, 9].map(quorumOf)).toEqual([2, 3, 4, 5]);
  });

  it('validity = ttl − elapsed − (ttl × driftFactor + 2 ms)', () => {
    expect(driftMarginMs(10_000, 0.01)).toBe(102);
    expect(remainingValidityMs(10_000, 50, 0.01)).toBe(9_848);
    expect(remainingValidityMs(100, 97, 0.01)).toBe(0); // not positive: not a lock
    expect(remainingValidityMs(100, 98, 0.01)).toBeLessThan(0);
    expect(remainingValidityMs(10, 0, 0)).toBe(8);
  });

  it('the per-node timeout is proportional to the TTL within [50, 500] ms, unless fixed', () => {
    const proportional = { nodeTimeoutMs: undefined, nodeTimeoutFactor: 0.005 };
    expect(nodeTimeoutFor(proportional, 10_000)).toBe(50);
    expect(nodeTimeoutFor(proportional, 30_000)).toBe(150);
    expect(nodeTimeoutFor(proportional, 400)).toBe(50);
    expect(nodeTimeoutFor(proportional, 3_600_000)).toBe(500);
    expect(nodeTimeoutFor({ nodeTimeoutMs: 7, nodeTimeoutFactor: 0.005 }, 10_000)).toBe(7);
  });
});

describe('endpoint identity', () => {
  it('sees through loopback spellings, case, brackets, default port and database number', () => {
    const same = [
      normalizeEndpoint('127.0.0.1', 6379),
      normalizeEndpoint('localhost', undefined),
      normalizeEndpoint('LocalHost', '6379'),
      normalizeEndpoint('[::1]', 6379),
      endpointOfUrl('redis://localhost', 'm'),
      endpointOfUrl('redis://127.0.0.1:6379/4', 'm'),
      endpointOfUrl('rediss://user:pw@127.0.0.1:6379', 'm'),
    ];
    expect(new Set(same)).toEqual(new Set(['127.0.0.1:6379']));
    expect(normalizeEndpoint('127.0.0.1', 6380)).not.toBe(normalizeEndpoint('127.0.0.1', 6379));
    expect(normalizeEndpoint(undefined, undefined, '/tmp/redis.sock')).toBe('unix:/tmp/redis.sock');
  });

  it('refuses URLs that are not redis:// with LOCK_INVALID_ARGUMENT', () => {
    expect(() => endpointOfUrl('http://127.0.0.1:6379', 'masters[0]')).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }) as Error);
    expect(() => endpointOfUrl('not a url', 'masters[0]')).toThrow(TypeError);
  });
});

describe('stored value', () => {
  it('is the owner id alone without metadata, and round-trips metadata (NUL and unicode included)', () => {
    const owner = '6f1c2d4e-0000-4000-8000-000000000000';
    expect(encodeLockValue(owner, undefined)).toBe(owner);
    expect(decodeLockValue(encodeLockValue(owner, 'a\u0000b é'))).toEqual({ ownerId: owner, metadata: 'a\u0000b é' });
    expect(decodeLockValue(encodeLockValue(owner, ''))).toEqual({ ownerId: owner, metadata: '' });
    expect(decodeLockValue('foreign-token')).toEqual({ ownerId: 'foreign-token', metadata: undefined });
  });
});
