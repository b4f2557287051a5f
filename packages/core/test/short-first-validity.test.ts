import { describe, expect, it } from 'vitest';
import { BaseLockProvider, monotonicNow, normalizeCapabilities, type BackendAcquireRequest } from '../src/adapter.js';

/**
 * A backend whose grants start with a short validity (as a Redis hand-off's grant does: a short TTL
 * set by the release that granted it), far below the TTL asked for; its extensions give the full TTL.
 */
function shortFirstValidity(firstValidityMs: number) {
  const requests: BackendAcquireRequest[] = [];
  const extensions: { at: number; validUntil: number }[] = [];
  let extended: (() => void) | undefined;
  const firstExtension = new Promise<void>((resolve) => (extended = resolve));
  const provider = new BaseLockProvider({
    name: 'short-first-validity',
    capabilities: normalizeCapabilities({ fencing: 'none', extend: true, lossDetection: true }),
    acquire: async (request) => {
      requests.push(request);
      const validUntil = monotonicNow() + firstValidityMs;
      return {
        fencingToken: undefined,
        validUntil,
        extend: async (ttlMs: number) => {
          extensions.push({ at: monotonicNow(), validUntil });
          extended?.();
          return monotonicNow() + ttlMs;
        },
        release: async () => true,
      };
    },
    inspect: async () => undefined,
    close: async () => undefined,
  });
  return { provider, requests, extensions, firstExtension };
}

describe('a grant whose first validity is shorter than its TTL', () => {
  it('is renewed automatically before that validity runs out, not a third of the TTL later', async () => {
    const { provider, extensions, firstExtension } = shortFirstValidity(600);
    const lock = await provider.acquire('k', { ttlMs: 60_000 });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([firstExtension, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no extension within 5 s')), 5_000)))]);
    clearTimeout(timer);
    const [first] = extensions;
    expect(first!.at).toBeLessThan(first!.validUntil);
    expect(lock.isHeld()).toBe(true);
    expect(lock.validUntil).toBeGreaterThan(first!.validUntil);
    await lock.release();
    await provider.close();
  });

  it('tells the backend whether core will renew the lock (autoExtend)', async () => {
    const { provider, requests } = shortFirstValidity(60_000);
    await (await provider.acquire('a', { ttlMs: 60_000 })).release();
    await (await provider.acquire('b', { ttlMs: 60_000, autoExtend: false })).release();
    expect(requests.map((request) => request.autoExtend)).toEqual([true, false]);
    await provider.close();
  });
});
