import { describe, expect, it } from 'vitest';
import { MemoryLockProvider } from '../src/adapter.js';

/** Blocks this thread (timers included) for `ms`, as a GC pause would. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('MemoryLockStore', () => {
  it('grants a key once when requests arrive after the holder expired but before its expiry timer ran', async () => {
    const provider = new MemoryLockProvider();
    const holder = await provider.acquire('k', { ttlMs: 50, autoExtend: false });
    freeze(120);
    const [b, c] = await Promise.all([provider.tryAcquire('k'), provider.tryAcquire('k')]);
    expect([b, c].filter((handle) => handle !== undefined)).toHaveLength(1);
    const winner = (b ?? c)!;
    expect(winner.fencingToken! > holder.fencingToken!).toBe(true);
    expect((await provider.inspect('k'))?.holders.map((h) => h.ownerId)).toEqual([winner.ownerId]);
    expect(await winner.release()).toBe(true);
    expect(provider.store.size).toBe(0);
    await provider.close();
  });
});
