import { afterEach, describe, expect, it } from 'vitest';
import {
  BaseLockProvider,
  MAX_SEMAPHORE_LIMIT,
  MemoryLockProvider,
  MemoryLockStore,
  isLockError,
  normalizeCapabilities,
  type BackendSemaphoreRequest,
  type LockBackend,
  type LockEventMap,
  type LockProvider,
  type SemaphoreHandle,
} from '../src/adapter.js';

const providers: LockProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((provider) => provider.close()));
});

function memory(store = new MemoryLockStore()): MemoryLockProvider {
  const provider = new MemoryLockProvider({ store });
  providers.push(provider);
  return provider;
}

/** Resolves the next `event` of `provider`, or rejects after a bound (no test waits unbounded). */
function nextEvent<E extends keyof LockEventMap>(
  provider: LockProvider,
  event: E,
  predicate: (payload: LockEventMap[E]) => boolean = () => true,
  ms = 5_000,
): Promise<LockEventMap[E]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} event within ${ms} ms`)), ms);
    const off = provider.on(event, (payload) => {
      if (!predicate(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol('pending');
  const winner = await Promise.race([promise.then(() => undefined, () => undefined), new Promise((r) => setImmediate(() => r(marker)))]);
  return winner === marker;
}

/** A backend with the given semaphore support whose acquisitions must never be reached. */
function unreachableBackend(semaphore: 'none' | 'single-permit'): LockBackend {
  const never = (): Promise<never> => Promise.reject(new Error('validation should have refused this call before any I/O'));
  return {
    name: `unreachable-${semaphore}`,
    capabilities: normalizeCapabilities({ fencing: 'per-key', extend: true, semaphore }),
    acquire: never,
    inspect: never,
    ...(semaphore === 'none' ? {} : { acquireSemaphore: (_request: BackendSemaphoreRequest) => never(), inspectSemaphore: never }),
    close: async () => undefined,
  };
}

describe('semaphores on MemoryLockProvider', () => {
  it('grants at most `limit` permits, hands a freed permit to a waiter at once, and reports holders', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const key = 'pool';
    const held = [await a.acquireSemaphore(key, { limit: 3 }), await a.acquireSemaphore(key, { limit: 3 }), await b.tryAcquireSemaphore(key, { limit: 3 })];
    for (const handle of held) {
      expect(handle?.mode).toBe('semaphore');
      expect(handle?.limit).toBe(3);
      expect(handle?.permits).toBe(1);
    }
    expect(await b.tryAcquireSemaphore(key, { limit: 3 })).toBeUndefined();
    const info = await b.inspectSemaphore(key);
    expect(info?.limit).toBe(3);
    expect(info?.holders.map((h) => h.ownerId).sort()).toEqual(held.map((h) => h?.ownerId).sort());
    expect(info?.holders.every((h) => h.mode === 'semaphore' && h.permits === 1)).toBe(true);
    const contended = nextEvent(b, 'contended');
    const waiting = b.acquireSemaphore(key, { limit: 3, waitMs: 5_000 });
    expect((await contended).mode).toBe('semaphore');
    expect(store.semaphores.waiting(key)).toBe(1);
    expect(await isPending(waiting)).toBe(true);
    expect(await held[0]!.release()).toBe(true);
    const next = await waiting;
    expect(next.isHeld()).toBe(true);
    expect(next.fencingToken! > held[2]!.fencingToken!).toBe(true);
    for (const handle of [...held.slice(1), next]) expect(await handle!.release()).toBe(true);
    expect(await a.inspectSemaphore(key)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('gives every grant of a key a strictly greater token, across providers', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const tokens: bigint[] = [];
    const open: SemaphoreHandle[] = [];
    for (let round = 0; round < 8; round += 1) {
      const handle = await (round % 2 === 0 ? a : b).acquireSemaphore('tokens', { limit: 2 });
      tokens.push(handle.fencingToken!);
      open.push(handle);
      if (open.length === 2) await open.shift()!.release();
    }
    for (let index = 1; index < tokens.length; index += 1) expect(tokens[index]! > tokens[index - 1]!).toBe(true);
    await Promise.all(open.map((handle) => handle.release()));
  });

  it('refuses another limit with LOCK_LIMIT_MISMATCH while held, and lets the next acquirer of an empty semaphore set it', async () => {
    const provider = memory();
    const holder = await provider.acquireSemaphore('limits', { limit: 2 });
    for (const attempt of [provider.tryAcquireSemaphore('limits', { limit: 3 }), provider.acquireSemaphore('limits', { limit: 1, waitMs: 1_000 })]) {
      const error: unknown = await attempt.catch((e: unknown) => e);
      expect(isLockError(error, 'LOCK_LIMIT_MISMATCH')).toBe(true);
      expect(error).toMatchObject({ key: 'limits' });
      expect((error as Error).message).toMatch(/limit 2.*limit [13]/);
    }
    expect(provider.store.semaphores.waiting('limits')).toBe(0);
    await holder.release();
    const other = await provider.tryAcquireSemaphore('limits', { limit: 5 });
    expect(other?.limit).toBe(5);
    expect((await provider.inspectSemaphore('limits'))?.limit).toBe(5);
    await other?.release();
  });

  it('takes several permits at once or not at all, and keeps strict arrival order behind a large request', async () => {
    const store = new MemoryLockStore();
    const [a, b, c] = [memory(store), memory(store), memory(store)];
    const two = await a.acquireSemaphore('multi', { limit: 3, permits: 2 });
    expect(two.permits).toBe(2);
    // Two more do not fit (one is free): nothing is taken, not even the free one.
    expect(await b.tryAcquireSemaphore('multi', { limit: 3, permits: 2 })).toBeUndefined();
    expect((await a.inspectSemaphore('multi'))?.holders.map((h) => h.permits)).toEqual([2]);
    const bigQueued = nextEvent(b, 'contended');
    const big = b.acquireSemaphore('multi', { limit: 3, permits: 3, waitMs: 5_000 });
    await bigQueued;
    // One permit is free, but a request queued before it: FIFO holds it back.
    expect(await c.tryAcquireSemaphore('multi', { limit: 3 })).toBeUndefined();
    const smallQueued = nextEvent(c, 'contended');
    const small = c.acquireSemaphore('multi', { limit: 3, waitMs: 5_000 });
    await smallQueued;
    await two.release();
    const bigHandle = await big;
    expect(bigHandle.permits).toBe(3);
    expect(await isPending(small)).toBe(true);
    await bigHandle.release();
    const smallHandle = await small;
    expect(smallHandle.fencingToken! > bigHandle.fencingToken!).toBe(true);
    await smallHandle.release();
    expect(store.size).toBe(0);
  });

  it('frees the permits of an abandoned holder by expiry, signals its loss, and grants the waiter', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const holder = await a.acquireSemaphore('expiry', { limit: 1, ttlMs: 100, autoExtend: false });
    const lost = nextEvent(a, 'lost');
    const next = await b.acquireSemaphore('expiry', { limit: 1, waitMs: 5_000 });
    expect((await lost).error).toMatchObject({ code: 'LOCK_LOST', reason: 'expired' });
    expect(holder.signal.aborted).toBe(true);
    expect(next.fencingToken! > holder.fencingToken!).toBe(true);
    expect(await holder.release()).toBe(false);
    await next.release();
  });

  it('extends a holder (by hand and automatically) and ends a hold at maxHoldMs', async () => {
    const provider = memory();
    const handle = await provider.acquireSemaphore('extend', { limit: 2, ttlMs: 200 });
    const before = handle.validUntil;
    await handle.extend(10_000);
    expect(handle.validUntil).toBeGreaterThan(before);
    const automatic = await provider.acquireSemaphore('extend', { limit: 2, ttlMs: 90 });
    const extended = await nextEvent(provider, 'extended', (e) => e.ownerId === automatic.ownerId);
    expect(extended).toMatchObject({ mode: 'semaphore', automatic: true });
    await automatic.release();
    const bounded = await provider.acquireSemaphore('extend', { limit: 2, maxHoldMs: 50 });
    const lost = await nextEvent(provider, 'lost', (e) => e.ownerId === bounded.ownerId);
    expect(lost.error).toMatchObject({ reason: 'max-hold' });
    expect(bounded.isHeld()).toBe(false);
    // The bounded holder's permit came back to the semaphore: the second one is free again.
    const again = await provider.tryAcquireSemaphore('extend', { limit: 2 });
    expect(again).toBeDefined();
    await Promise.all([handle.release(), again?.release()]);
  });

  it('leaves nothing behind when a waiter times out or is aborted', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [memory(store), memory(store)];
    const holder = await a.acquireSemaphore('give-up', { limit: 1 });
    await expect(b.acquireSemaphore('give-up', { limit: 1, waitMs: 30 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT', key: 'give-up' });
    const controller = new AbortController();
    const queued = nextEvent(b, 'contended');
    const aborted = b.acquireSemaphore('give-up', { limit: 1, signal: controller.signal, waitMs: 5_000 });
    await queued;
    controller.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
    expect(store.semaphores.waiting('give-up')).toBe(0);
    await holder.release();
    expect(store.size).toBe(0);
  });

  it('queues the semaphore calls of one provider in their own local line, apart from its locks', async () => {
    const provider = memory();
    const lock = await provider.acquire('shared-name');
    const permit = await provider.tryAcquireSemaphore('shared-name', { limit: 1 });
    expect(permit).toBeDefined();
    expect(await provider.tryAcquire('shared-name')).toBeUndefined();
    const waiters = [provider.acquireSemaphore('shared-name', { limit: 1, waitMs: 5_000 }), provider.acquireSemaphore('shared-name', { limit: 1, waitMs: 5_000 })];
    // One contender per key at the store; the second waits in the provider's own line.
    expect(provider.store.semaphores.waiting('shared-name')).toBe(1);
    await lock.release();
    expect(await isPending(waiters[0]!)).toBe(true);
    await permit!.release();
    const first = await waiters[0]!;
    await first.release();
    await (await waiters[1]!).release();
  });

  it('reports semaphore grants as such in events, and releases with await using', async () => {
    const provider = memory();
    const acquired = nextEvent(provider, 'acquired');
    {
      await using handle = await provider.acquireSemaphore('events', { limit: 4, permits: 3 });
      expect(await acquired).toMatchObject({ mode: 'semaphore', key: 'events', limit: 4, permits: 3, ownerId: handle.ownerId });
    }
    expect(await provider.inspectSemaphore('events')).toBeUndefined();
  });
});

describe('semaphore input checks', () => {
  it('refuses bad limits and permits with a typed LOCK_INVALID_ARGUMENT before any I/O', async () => {
    const provider = memory();
    await provider.close();
    const cases: [unknown, unknown, typeof TypeError | typeof RangeError][] = [
      [undefined, undefined, TypeError],
      ['3', undefined, TypeError],
      [3n, undefined, TypeError],
      [0, undefined, RangeError],
      [-1, undefined, RangeError],
      [1.5, undefined, RangeError],
      [Number.NaN, undefined, RangeError],
      [Number.POSITIVE_INFINITY, undefined, RangeError],
      [MAX_SEMAPHORE_LIMIT + 1, undefined, RangeError],
      [3, 0, RangeError],
      [3, 4, RangeError],
      [3, 1.5, RangeError],
      [3, '1', TypeError],
    ];
    for (const [limit, permits, kind] of cases) {
      const options = (permits === undefined ? { limit } : { limit, permits }) as never;
      for (const attempt of [provider.acquireSemaphore('k', options), provider.tryAcquireSemaphore('k', options)]) {
        const error: unknown = await attempt.catch((e: unknown) => e);
        expect(error, `limit ${String(limit)}, permits ${String(permits)}`).toBeInstanceOf(kind);
        expect(error).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
      }
    }
    await expect(provider.acquireSemaphore('k', undefined as never)).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    await expect(provider.acquireSemaphore('k', { limit: 2, mode: 'shared' } as never)).rejects.toBeInstanceOf(TypeError);
    await expect(provider.tryAcquireSemaphore('k', { limit: 2, waitMs: 5 } as never)).rejects.toBeInstanceOf(TypeError);
    await expect(provider.acquire('k', { limit: 2 } as never)).rejects.toBeInstanceOf(TypeError);
    await expect(provider.tryAcquire('k', { permits: 2 } as never)).rejects.toBeInstanceOf(TypeError);
    await expect(provider.acquireSemaphore('', { limit: 2 })).rejects.toBeInstanceOf(RangeError);
    await expect(provider.inspectSemaphore(7 as never)).rejects.toBeInstanceOf(TypeError);
    // Valid input reaches the closed provider, which refuses it as closed: the checks above came first.
    await expect(provider.acquireSemaphore('k', { limit: MAX_SEMAPHORE_LIMIT, permits: MAX_SEMAPHORE_LIMIT })).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
  });

  it('refuses semaphores with LOCK_UNSUPPORTED where the backend has none, and several permits where it takes one', async () => {
    const none = new BaseLockProvider(unreachableBackend('none'));
    const single = new BaseLockProvider(unreachableBackend('single-permit'));
    providers.push(none, single);
    await expect(none.acquireSemaphore('k', { limit: 2 })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    await expect(none.tryAcquireSemaphore('k', { limit: 2 })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    await expect(none.inspectSemaphore('k')).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    await expect(single.acquireSemaphore('k', { limit: 3, permits: 2 })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    // Bad input is still bad input where semaphores are unsupported.
    await expect(none.acquireSemaphore('k', { limit: 0 })).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
  });

  it('refuses a backend that declares semaphores without the methods to serve them', () => {
    const backend: LockBackend = { ...unreachableBackend('none'), capabilities: normalizeCapabilities({ fencing: 'none', semaphore: 'single-permit' }) };
    expect(() => new BaseLockProvider(backend)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', argument: 'capabilities.semaphore' }));
  });
});
