import { describe, expect, it } from 'vitest';
import { BaseLockProvider, MemoryLockProvider, monotonicNow, normalizeCapabilities } from '../src/adapter.js';

/**
 * A backend whose grants start with a short validity (as a Redis hand-off's grant does: a short TTL
 * set by the release that granted it), far below the TTL asked for; its extensions give the full TTL.
 */
function shortFirstValidity(firstValidityMs: number) {
  const extensions: { at: number; validUntil: number }[] = [];
  let extended: (() => void) | undefined;
  const firstExtension = new Promise<void>((resolve) => (extended = resolve));
  const provider = new BaseLockProvider({
    name: 'short-first-validity',
    capabilities: normalizeCapabilities({ fencing: 'none', extend: true, lossDetection: true }),
    acquire: async () => {
      const validUntil = monotonicNow() + firstValidityMs;
      return {
        fencingToken: undefined,
        validUntil,
        provisional: true,
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
  return { provider, extensions, firstExtension };
}

describe('a provisional grant (first validity shorter than its TTL by design)', () => {
  it('is renewed automatically before that validity runs out, not a third of the TTL later', async () => {
    const { provider, extensions, firstExtension } = shortFirstValidity(1_500);
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

  it('is extended to its TTL without auto-extension too, once, and not at all when released first', async () => {
    const { provider, extensions, firstExtension } = shortFirstValidity(1_500);
    const brief = await provider.acquire('brief', { ttlMs: 60_000, autoExtend: false });
    expect(await brief.release()).toBe(true);
    const kept = await provider.acquire('kept', { ttlMs: 60_000, autoExtend: false });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([firstExtension, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no extension within 5 s')), 5_000)))]);
    clearTimeout(timer);
    expect(extensions).toHaveLength(1);
    expect(extensions[0]!.at).toBeLessThan(extensions[0]!.validUntil);
    expect(kept.validUntil).toBeGreaterThan(monotonicNow() + 30_000);
    await kept.release();
    await provider.close();
  });

  it('an automatic renewal after a shorter extend(ttlMs) comes before that validity runs out', async () => {
    const provider = new MemoryLockProvider();
    const lock = await provider.acquire('k', { ttlMs: 60_000 });
    const renewed = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no automatic extension within 5 s')), 5_000);
      provider.on('extended', (event) => {
        if (!event.automatic) return;
        clearTimeout(timer);
        resolve(event.validUntil);
      });
    });
    await lock.extend(1_500);
    const shortUntil = lock.validUntil;
    const validUntil = await renewed;
    expect(monotonicNow()).toBeLessThan(shortUntil);
    expect(validUntil).toBeGreaterThan(monotonicNow() + 30_000);
    expect(lock.isHeld()).toBe(true);
    await lock.release();
    await provider.close();
  });
});
