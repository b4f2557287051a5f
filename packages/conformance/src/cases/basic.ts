import { LockError, monotonicNow } from '@fencelock/core';
import { CAPABILITY_NAMES } from '@fencelock/core/adapter';
import { describe, expect, it } from 'vitest';
import type { SuiteContext } from '../context.js';

/** The handle, tryAcquire, inspect, release and `await using`. */
export function registerBasicCases(ctx: SuiteContext): void {
  describe('basics', () => {
    it('reports complete capabilities that match expectCapabilities', async () => {
      const provider = await ctx.provider();
      const caps = provider.capabilities;
      for (const name of CAPABILITY_NAMES) expect(caps, `capabilities.${name}`).toHaveProperty(name);
      expect(['global', 'per-key', 'none']).toContain(caps.fencing);
      expect(['per-lock', 'session']).toContain(caps.expiry);
      expect(Object.isFrozen(caps)).toBe(true);
      for (const [name, value] of Object.entries(ctx.options.expectCapabilities ?? {})) {
        expect(caps[name as keyof typeof caps], `capabilities.${name}`).toBe(value);
      }
      expect(typeof provider.name).toBe('string');
      expect(provider.name.length).toBeGreaterThan(0);
    });

    it('acquire returns a held handle with a unique owner id and an honest token', async () => {
      const provider = await ctx.provider();
      const key = ctx.key('handle');
      const before = monotonicNow();
      const lock = await provider.acquire(key);
      expect(lock.key).toBe(key);
      expect(lock.mode).toBe('exclusive');
      expect(lock.state).toBe('held');
      expect(lock.isHeld()).toBe(true);
      expect(lock.signal.aborted).toBe(false);
      expect(lock.acquiredAt).toBeGreaterThanOrEqual(before);
      expect(lock.validUntil).toBeGreaterThan(monotonicNow());
      expect(typeof lock.ownerId).toBe('string');
      expect(lock.ownerId.length).toBeGreaterThan(0);
      if (provider.capabilities.fencing === 'none') expect(lock.fencingToken).toBeUndefined();
      else expect(typeof lock.fencingToken).toBe('bigint');
      expect(await lock.release()).toBe(true);
      const again = await provider.acquire(key);
      expect(again.ownerId).not.toBe(lock.ownerId);
      await again.release();
    });

    it('tryAcquire resolves undefined on a held key, from the same and from another provider', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('try');
      const lock = await a.tryAcquire(key);
      expect(lock).toBeDefined();
      const declined: string[] = [];
      b.on('declined', (event) => declined.push(event.key));
      expect(await a.tryAcquire(key)).toBeUndefined();
      expect(await b.tryAcquire(key)).toBeUndefined();
      // The refusal is reported as an event (core emits it; a provider must not bypass core's path).
      expect(declined).toEqual([key]);
      await lock?.release();
      const next = await b.tryAcquire(key);
      expect(next?.isHeld()).toBe(true);
      await next?.release();
    });

    it('independent keys do not block each other', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const one = await a.acquire(ctx.key('independent-1'));
      const two = await b.tryAcquire(ctx.key('independent-2'));
      expect(two?.isHeld()).toBe(true);
      await Promise.all([one.release(), two?.release()]);
    });

    it('inspect shows the holder, its token and metadata, and nothing on a free key', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('inspect');
      expect(await b.inspect(key)).toBeUndefined();
      const lock = await a.acquire(key, { metadata: 'worker-7' });
      const info = await b.inspect(key);
      expect(info?.key).toBe(key);
      expect(info?.holders).toHaveLength(1);
      expect(info?.holders[0]?.ownerId).toBe(lock.ownerId);
      expect(info?.holders[0]?.mode).toBe('exclusive');
      expect(info?.holders[0]?.metadata).toBe('worker-7');
      expect(info?.holders[0]?.fencingToken).toBe(lock.fencingToken);
      await lock.release();
      expect(await b.inspect(key)).toBeUndefined();
    });

    it('release resolves true once, then false, and frees the key', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('release');
      const lock = await a.acquire(key);
      expect(await lock.release()).toBe(true);
      expect(await lock.release()).toBe(false);
      expect(lock.state).toBe('released');
      expect(lock.isHeld()).toBe(false);
      expect(lock.signal.aborted).toBe(true);
      expect(() => lock.assertHeld()).toThrow(LockError);
      const next = await b.tryAcquire(key);
      expect(next).toBeDefined();
      // A late second release of the old handle must not free the new holder's lock.
      expect(await lock.release()).toBe(false);
      expect(await a.tryAcquire(key)).toBeUndefined();
      await next?.release();
    });

    it('await using releases the lock when the block ends', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const key = ctx.key('using');
      let inner: { isHeld(): boolean } | undefined;
      {
        await using lock = await a.acquire(key);
        inner = lock;
        expect(await b.tryAcquire(key)).toBeUndefined();
      }
      expect(inner?.isHeld()).toBe(false);
      const next = await b.tryAcquire(key);
      expect(next).toBeDefined();
      await next?.release();
    });

    it('locks are not reentrant: the same provider cannot take a key it holds', async () => {
      const provider = await ctx.provider();
      const key = ctx.key('reentrant');
      const lock = await provider.acquire(key);
      expect(await provider.tryAcquire(key)).toBeUndefined();
      await expect(provider.acquire(key, { waitMs: ctx.bound(50) })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
      await lock.release();
    });
  });
}
