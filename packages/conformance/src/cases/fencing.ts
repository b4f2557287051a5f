import { describe, expect, it } from 'vitest';
import type { SuiteContext } from '../context.js';

/** Fencing tokens: strictly increasing per key, or honestly absent. */
export function registerFencingCases(ctx: SuiteContext): void {
  describe('fencing tokens', () => {
    it('increase strictly per key across acquisitions and provider instances (or are absent with fencing none)', async () => {
      const providers = [await ctx.provider(), await ctx.provider(), await ctx.provider()];
      const key = ctx.key('tokens');
      const tokens: (bigint | undefined)[] = [];
      for (let round = 0; round < 9; round += 1) {
        const provider = providers[round % providers.length];
        if (provider === undefined) throw new Error('unreachable');
        const lock = await provider.acquire(key);
        tokens.push(lock.fencingToken);
        expect(await lock.release()).toBe(true);
      }
      if (providers[0]?.capabilities.fencing === 'none') {
        expect(tokens.every((token) => token === undefined)).toBe(true);
        return;
      }
      for (let index = 1; index < tokens.length; index += 1) {
        const [before, after] = [tokens[index - 1], tokens[index]];
        expect(typeof after).toBe('bigint');
        expect(after! > before!, `token ${index}: ${String(after)} > ${String(before)}`).toBe(true);
      }
    });

    it('keep tokens of other keys out of the way: each key still increases on its own', async () => {
      const provider = await ctx.provider();
      const [k1, k2] = [ctx.key('tokens-a'), ctx.key('tokens-b')];
      const a1 = await provider.acquire(k1);
      await a1.release();
      const b1 = await provider.acquire(k2);
      await b1.release();
      const a2 = await provider.acquire(k1);
      await a2.release();
      if (provider.capabilities.fencing === 'none') {
        expect([a1.fencingToken, b1.fencingToken, a2.fencingToken]).toEqual([undefined, undefined, undefined]);
        return;
      }
      expect(a2.fencingToken! > a1.fencingToken!).toBe(true);
      expect(a1.fencingToken).toBeGreaterThanOrEqual(0n);
      expect(b1.fencingToken).toBeGreaterThanOrEqual(0n);
    });
  });
}
