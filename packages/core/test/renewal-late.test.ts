import { describe, expect, it } from 'vitest';
import { BaseLockProvider, MemoryLockProvider, monotonicNow, normalizeCapabilities, type LockEventMap } from '../src/adapter.js';

function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function nextLate(provider: { on: BaseLockProvider['on'] }, ms = 5_000): Promise<LockEventMap['renewal-late']> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no renewal-late event')), ms);
    const off = provider.on('renewal-late', (event) => {
      clearTimeout(timer);
      off();
      resolve(event);
    });
  });
}

describe('renewal-late', () => {
  it('reports a renewal that starts late because the event loop was blocked, while the lock is still valid', async () => {
    const provider = new MemoryLockProvider();
    const lock = await provider.acquire('k', { ttlMs: 900 });
    const late = nextLate(provider);
    // The renewal is due at a third of the TTL (300 ms); the loop is blocked until well after it.
    freeze(450);
    const event = await late;
    expect(event.lateMs).toBeGreaterThan(90);
    expect(event.remainingMs).toBeGreaterThan(0);
    expect(event.error).toBeUndefined();
    expect(lock.isHeld()).toBe(true);
    await lock.release();
    await provider.close();
  });

  it('reports a failed renewal that will be retried, with its error', async () => {
    let down = false;
    const provider = new BaseLockProvider({
      name: 'flaky',
      capabilities: normalizeCapabilities({ fencing: 'none', extend: true, lossDetection: true }),
      acquire: async () => ({
        fencingToken: undefined,
        validUntil: monotonicNow() + 600,
        extend: async () => {
          if (down) throw new Error('ECONNRESET');
          return monotonicNow() + 600;
        },
        release: async () => true,
      }),
      inspect: async () => undefined,
      close: async () => undefined,
    });
    const lock = await provider.acquire('k', { ttlMs: 600 });
    down = true;
    const event = await nextLate(provider);
    expect(event.error).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    expect(event.remainingMs).toBeGreaterThan(0);
    down = false;
    await lock.release();
    await provider.close();
  });
});
