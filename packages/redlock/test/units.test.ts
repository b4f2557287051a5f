/** The pure parts: majority, drift and validity arithmetic, endpoint identity, the stored value. */
import { driftMarginMs } from '@fencelock/core/adapter';
import { switchesReplicationBeforeWrites } from '@fencelock/redis-shared';
import { describe, expect, it } from 'vitest';
import { endpointOfUrl, normalizeEndpoint } from '../src/endpoints.js';
import { decodeLockValue, encodeLockValue } from '../src/lock-value.js';
import { requestTimeoutFor } from '../src/options.js';
import { quorumOf, remainingValidityMs, roundValidUntil } from '../src/quorum.js';
import { ACQUIRE_LUA, RELEASE_LUA } from '../src/redlock-scripts.js';

describe('quorum and validity', () => {
  it('a majority is ⌊N/2⌋ + 1', () => {
    expect([3, 5, 7, 9].map(quorumOf)).toEqual([2, 3, 4, 5]);
  });

  it("validity = ttl − elapsed − core's drift margin (⌈ttl × clockDriftFactor⌉ + 2 ms)", () => {
    expect(driftMarginMs(10_000, 0.01)).toBe(102);
    expect(remainingValidityMs(10_000, 50, 0.01)).toBe(9_848);
    expect(remainingValidityMs(100, 97, 0.01)).toBe(0); // not positive: not a lock
    expect(remainingValidityMs(100, 98, 0.01)).toBeLessThan(0);
    expect(remainingValidityMs(10, 0, 0)).toBe(8);
    // The share is rounded up to a whole ms, as for every adapter.
    expect(remainingValidityMs(1_001, 0, 0.01)).toBe(1_001 - 11 - 2);
  });

  it('the deadline counts from the send time, not minus the round again: what is left at its end is the validity', () => {
    const start = 1_000;
    const elapsed = 40;
    expect(roundValidUntil(start, 10_000, 0.01)).toBe(start + 10_000 - 102);
    expect(roundValidUntil(start, 10_000, 0.01) - (start + elapsed)).toBe(remainingValidityMs(10_000, elapsed, 0.01));
  });

  it('the per-master request timeout is proportional to the TTL within [50, 500] ms, unless fixed', () => {
    const proportional = { requestTimeoutMs: undefined, requestTimeoutFactor: 0.005 };
    expect(requestTimeoutFor(proportional, 10_000)).toBe(50);
    expect(requestTimeoutFor(proportional, 30_000)).toBe(150);
    expect(requestTimeoutFor(proportional, 400)).toBe(50);
    expect(requestTimeoutFor(proportional, 3_600_000)).toBe(500);
    expect(requestTimeoutFor({ requestTimeoutMs: 7, requestTimeoutFactor: 0.005 }, 10_000)).toBe(7);
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

describe('replication on Redis 3.2-4.x', () => {
  it('both scripts ask for effects replication before their first write, as they read TIME', () => {
    expect(switchesReplicationBeforeWrites(ACQUIRE_LUA)).toBe(true);
    expect(switchesReplicationBeforeWrites(RELEASE_LUA)).toBe(true);
  });
});
