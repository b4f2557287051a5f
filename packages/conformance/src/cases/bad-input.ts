import { MAX_DURATION_MS, MAX_KEY_BYTES, type LockProvider } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import type { SuiteContext } from '../context.js';

/** Keys of the wrong type or shape; they must be refused as TypeError with LOCK_INVALID_ARGUMENT. */
const WRONG_TYPE_KEYS: readonly [string, unknown][] = [
  ['a number', 1],
  ['undefined', undefined],
  ['null', null],
  ['an object', {}],
  ['a symbol', Symbol('k')],
  ['a Buffer', Buffer.from('k')],
  ['an array', ['k']],
];

/** Keys of the right type that are refused as RangeError. */
const OUT_OF_RANGE_KEYS: readonly [string, string][] = [
  ['empty', ''],
  ['a lone high surrogate', '\uD800'],
  ['a lone low surrogate', 'a\uDC00b'],
  ['too long', 'x'.repeat(MAX_KEY_BYTES + 1)],
  ['too long in UTF-8 bytes', 'é'.repeat(MAX_KEY_BYTES / 2 + 1)],
];

const BAD_DURATIONS: readonly [string, unknown, 'TypeError' | 'RangeError'][] = [
  ['0', 0, 'RangeError'],
  ['negative', -1, 'RangeError'],
  ['NaN', Number.NaN, 'RangeError'],
  ['Infinity', Number.POSITIVE_INFINITY, 'RangeError'],
  ['above 2^31-1', MAX_DURATION_MS + 1, 'RangeError'],
  ['a string', '1000', 'TypeError'],
  ['a bigint', 1000n, 'TypeError'],
];

/** Legal keys that every adapter must handle as distinct, ordinary locks. */
const ODD_KEYS: readonly string[] = [
  '.',
  '..',
  '/',
  '//',
  'a/b',
  'a%2Fb',
  'trailing/',
  'a\u0000b',
  '\u0001',
  ' a',
  'A',
  'a',
  'é',
  'e\u0301',
  '__proto__',
  'constructor',
  'toString',
  '🔒 lock',
];

async function expectArgumentError(attempt: Promise<unknown>, kind: 'TypeError' | 'RangeError'): Promise<void> {
  const error: unknown = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'the call should have been refused').toBeDefined();
  expect(error).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
  expect(error).toBeInstanceOf(kind === 'TypeError' ? TypeError : RangeError);
}

/** Bad input is refused before any I/O; odd but legal keys work and stay distinct. */
export function registerBadInputCases(ctx: SuiteContext): void {
  // A closed provider can do no I/O: an argument error from it proves validation came first.
  const closedProvider = async (): Promise<LockProvider> => {
    const provider = await ctx.provider();
    await provider.close();
    return provider;
  };

  describe('bad input', () => {
    it('refuses keys of the wrong type with a TypeError before any I/O, never coercing them', async () => {
      const provider = await closedProvider();
      for (const [, key] of WRONG_TYPE_KEYS) {
        await expectArgumentError(provider.acquire(key as string), 'TypeError');
        await expectArgumentError(provider.tryAcquire(key as string), 'TypeError');
        await expectArgumentError(provider.inspect(key as string), 'TypeError');
      }
    });

    it('refuses empty, ill-formed and oversized keys with a RangeError before any I/O', async () => {
      const provider = await closedProvider();
      for (const [, key] of OUT_OF_RANGE_KEYS) {
        await expectArgumentError(provider.acquire(key), 'RangeError');
        await expectArgumentError(provider.tryAcquire(key), 'RangeError');
      }
    });

    it('refuses bad ttlMs, waitMs and maxHoldMs before any I/O', async () => {
      const provider = await closedProvider();
      const key = ctx.key('bad-durations');
      const session = provider.capabilities.expiry === 'session';
      for (const [, value, kind] of BAD_DURATIONS) {
        // A session provider refuses any per-lock TTL, whatever its value: LOCK_UNSUPPORTED.
        if (session) await expect(provider.acquire(key, { ttlMs: value as number })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        else await expectArgumentError(provider.acquire(key, { ttlMs: value as number }), kind);
        await expectArgumentError(provider.acquire(key, { maxHoldMs: value as number }), kind);
        if (value !== Number.POSITIVE_INFINITY && value !== 0) {
          await expectArgumentError(provider.acquire(key, { waitMs: value as number }), kind);
        }
      }
      if (!session && provider.capabilities.minTtlMs > 1) {
        await expectArgumentError(provider.acquire(key, { ttlMs: provider.capabilities.minTtlMs - 1 }), 'RangeError');
      }
    });

    it('refuses unknown options, bad modes, metadata and signals before any I/O', async () => {
      const provider = await closedProvider();
      const key = ctx.key('bad-options');
      await expectArgumentError(provider.acquire(key, 'fast' as never), 'TypeError');
      await expectArgumentError(provider.acquire(key, { ttl: 1000 } as never), 'TypeError');
      await expectArgumentError(provider.tryAcquire(key, { waitMs: 10 } as never), 'TypeError');
      await expectArgumentError(provider.acquire(key, { mode: 'write' as never }), 'TypeError');
      await expectArgumentError(provider.acquire(key, { autoExtend: 'yes' as never }), 'TypeError');
      await expectArgumentError(provider.acquire(key, { metadata: 42 as never }), 'TypeError');
      await expectArgumentError(provider.acquire(key, { metadata: 'm'.repeat(4096) }), 'RangeError');
      await expectArgumentError(provider.acquire(key, { signal: {} as never }), 'TypeError');
      const aborted = AbortSignal.abort();
      await expect(provider.acquire(key, { signal: aborted })).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
    });

    it('refuses a bad TTL on extend and keeps the lock (a session provider: any TTL, LOCK_UNSUPPORTED, as on acquire)', async () => {
      const provider = await ctx.provider();
      const lock = await provider.acquire(ctx.key('bad-extend'));
      const session = provider.capabilities.expiry === 'session';
      for (const [, value, kind] of BAD_DURATIONS) {
        if (session) await expect(lock.extend(value as number)).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
        else await expectArgumentError(lock.extend(value as number), kind);
      }
      expect(lock.isHeld()).toBe(true);
      expect(await lock.release()).toBe(true);
    });

    it('treats odd but legal keys as distinct, ordinary locks (byte-exact, no normalisation)', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const base = ctx.key('odd');
      const keys = ODD_KEYS.map((k) => `${base}${k}`);
      // The longest legal key, still unique to this run.
      keys.push(base + 'x'.repeat(MAX_KEY_BYTES - Buffer.byteLength(base)));
      const held = [];
      for (const key of keys) {
        const lock = await a.tryAcquire(key);
        expect(lock, `key ${JSON.stringify(key)} should be free`).toBeDefined();
        held.push(lock!);
      }
      for (const key of keys) expect(await b.tryAcquire(key), `key ${JSON.stringify(key)} should be held`).toBeUndefined();
      for (const lock of held) expect(await lock.release()).toBe(true);
    });

    it('does not let a key and its extensions block each other', async () => {
      const [a, b] = [await ctx.provider(), await ctx.provider()];
      const base = ctx.key('prefix');
      for (const [first, second] of [
        [base, `${base}/child`],
        [`${base}/child`, base],
        [base, `${base}0`],
        [`${base}-lock-0000000001`, base],
      ] as const) {
        const one = await a.acquire(first);
        const two = await b.tryAcquire(second);
        expect(two, `${second} while ${first} is held`).toBeDefined();
        await Promise.all([one.release(), two?.release()]);
      }
    });
  });
}
