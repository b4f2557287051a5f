/**
 * The building blocks of the lean acquire path: the shared deadline queue, the slot list, the
 * shared request deadlines, owner ids, and the maps that keep idle entries (local lines, the memory
 * store's keys). Behaviour only: what they allocate is measured by the bench (scenario 4b).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  BaseLockProvider,
  DeadlineQueue,
  MemoryLockProvider,
  lockLostError,
  monotonicNow,
  normalizeCapabilities,
  type BackendAcquireRequest,
  type BackendGrant,
  type GrantObserver,
  type LockBackend,
  MemoryLockStore,
  RequestDeadlines,
  SlotList,
  type DeadlineEntry,
  type Slotted,
} from '../src/adapter.js';
import { LocalLines } from '../src/lifecycle/local-line.js';
import { newOwnerId } from '../src/lifecycle/owner-id.js';

const entry = (name: string): DeadlineEntry & { name: string } => ({ name, deadlineAt: Number.POSITIVE_INFINITY, deadlineIndex: -1 });

describe('with fake timers', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('DeadlineQueue', () => {
    it('calls each entry when its deadline passes, in deadline order, behind one timer', () => {
      const due: string[] = [];
      const queue = new DeadlineQueue<ReturnType<typeof entry>>((e) => due.push(e.name));
      const now = performance.now();
      const [a, b, c] = [entry('a'), entry('b'), entry('c')];
      queue.set(c, now + 30);
      queue.set(a, now + 10);
      queue.set(b, now + 20);
      expect(vi.getTimerCount()).toBe(1);
      expect(queue.size).toBe(3);
      vi.advanceTimersByTime(10);
      expect(due).toEqual(['a']);
      vi.advanceTimersByTime(20);
      expect(due).toEqual(['a', 'b', 'c']);
      expect(queue.size).toBe(0);
      expect([a, b, c].every((e) => e.deadlineIndex === -1)).toBe(true);
    });

    it('moves entries, forgets deleted ones, and keeps its timer when the earliest one moves later', () => {
      const due: string[] = [];
      const queue = new DeadlineQueue<ReturnType<typeof entry>>((e) => due.push(e.name));
      const now = performance.now();
      const [a, b] = [entry('a'), entry('b')];
      queue.set(a, now + 10);
      queue.set(b, now + 50);
      // a renewed lock: its deadline moves later; no timer is replaced.
      queue.set(a, now + 100);
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(10);
      expect(due).toEqual([]);
      queue.delete(b);
      queue.delete(b);
      vi.advanceTimersByTime(90);
      expect(due).toEqual(['a']);
      // An earlier deadline than the armed timer re-arms it.
      queue.set(b, performance.now() + 500);
      queue.set(a, performance.now() + 5);
      vi.advanceTimersByTime(5);
      expect(due).toEqual(['a', 'a']);
      queue.clear();
      vi.advanceTimersByTime(1_000);
      expect(due).toEqual(['a', 'a']);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('keeps heap order through many random moves and deletes', () => {
      const due: number[] = [];
      const entries = Array.from({ length: 200 }, (_, i) => ({ ...entry(String(i)), at: 0 }));
      const queue = new DeadlineQueue<(typeof entries)[number]>((e) => due.push(e.at));
      const now = performance.now();
      let seed = 7;
      const random = (): number => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
      for (const e of entries) {
        e.at = now + 1 + Math.floor(random() * 1_000);
        queue.set(e, e.at);
      }
      for (let i = 0; i < 300; i += 1) {
        const e = entries[Math.floor(random() * entries.length)]!;
        if (random() < 0.3) {
          queue.delete(e);
          e.at = Number.NaN;
        } else {
          e.at = now + 1 + Math.floor(random() * 1_000);
          queue.set(e, e.at);
        }
      }
      vi.advanceTimersByTime(1_001);
      const expected = entries.map((e) => e.at).filter((at) => !Number.isNaN(at)).sort((x, y) => x - y);
      expect(due).toEqual(expected);
    });
  });

  describe('RequestDeadlines', () => {
    it('expires the requests still unsettled at their deadline, behind one timer, and forgets settled ones', () => {
      const expired: string[] = [];
      const settled = new Set<string>();
      const deadlines = new RequestDeadlines<string>(100, { settled: (r) => settled.has(r), expire: (r) => expired.push(r) });
      deadlines.add('a');
      vi.advanceTimersByTime(40);
      deadlines.add('b');
      deadlines.add('c');
      expect(vi.getTimerCount()).toBe(1);
      settled.add('a');
      settled.add('c');
      vi.advanceTimersByTime(60);
      expect(expired).toEqual([]);
      vi.advanceTimersByTime(40);
      // Not yet: an expiry waits until the replies already received are read (a turn of the loop).
      expect(expired).toEqual([]);
      vi.advanceTimersByTime(1);
      // b ran out; c settled in time.
      expect(expired).toEqual(['b']);
      expect(deadlines.size).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('drops settled requests from its oldest end as requests come, so it holds about those in flight', () => {
      const settled = new Set<number>();
      const deadlines = new RequestDeadlines<number>(1_000, { settled: (r) => settled.has(r), expire: () => undefined });
      for (let i = 0; i < 10_000; i += 1) {
        deadlines.add(i);
        settled.add(i);
      }
      expect(deadlines.size).toBeLessThanOrEqual(1);
      // A request that never settles holds back those after it until it expires, and no more.
      deadlines.add(-1);
      for (let i = 10_000; i < 10_100; i += 1) {
        deadlines.add(i);
        settled.add(i);
      }
      expect(deadlines.size).toBe(101);
      vi.advanceTimersByTime(1_000);
      expect(deadlines.size).toBe(0);
    });

    it('grows past its first size and expires in sending order', () => {
      const expired: number[] = [];
      const deadlines = new RequestDeadlines<number>(10, { settled: () => false, expire: (r) => expired.push(r) });
      for (let i = 0; i < 100; i += 1) deadlines.add(i);
      vi.advanceTimersByTime(10);
      vi.advanceTimersByTime(1);
      expect(expired).toEqual(Array.from({ length: 100 }, (_, i) => i));
      deadlines.add(1);
      deadlines.clear();
      vi.advanceTimersByTime(100);
      vi.advanceTimersByTime(1);
      expect(expired).toHaveLength(100);
      // An expiry decided before a clear() is dropped with it.
      deadlines.add(2);
      vi.advanceTimersByTime(10);
      deadlines.clear();
      vi.advanceTimersByTime(1);
      expect(expired).toHaveLength(100);
    });
  });
});

describe('SlotList', () => {
  it('adds, finds and removes items by their own slot, in any order', () => {
    const items: (Slotted & { id: number })[] = Array.from({ length: 5 }, (_, id) => ({ id, listSlot: -1 }));
    const list = new SlotList<(typeof items)[number]>();
    for (const item of items) list.add(item);
    expect(list.size).toBe(5);
    expect(list.delete(items[1]!)).toBe(true);
    expect(list.delete(items[1]!)).toBe(false);
    expect(list.has(items[1]!)).toBe(false);
    expect(list.delete(items[4]!)).toBe(true);
    expect(list.snapshot().map((item) => item.id).sort()).toEqual([0, 2, 3]);
    for (const item of [items[0]!, items[2]!, items[3]!]) expect(list.has(item)).toBe(true);
    list.clear();
    expect(list.size).toBe(0);
    expect(items.every((item) => item.listSlot === -1)).toBe(true);
  });
});

describe('owner ids', () => {
  it('are version 4 UUIDs in lowercase, all different, across many draws of entropy', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5_000; i += 1) {
      const id = newOwnerId();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      ids.add(id);
    }
    expect(ids.size).toBe(5_000);
  });

  it('are what a handle carries', async () => {
    const provider = new MemoryLockProvider();
    const lock = await provider.acquire('owner-id');
    expect(lock.ownerId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await lock.release();
    await provider.close();
  });
});

describe('maps that keep idle entries', () => {
  it('local lines: an emptied line is kept for its key, idle lines are forgotten once many, size counts busy lines', () => {
    const lines = new LocalLines();
    for (let round = 0; round < 3; round += 1) {
      const place = lines.join('hot', 'exclusive');
      expect(place.isHead).toBe(true);
      expect(lines.size).toBe(1);
      place.leave();
      expect(lines.size).toBe(0);
      expect(lines.waiting('hot', 'exclusive')).toBe(0);
    }
    const held = lines.join('busy', 'shared');
    for (let i = 0; i < 1_000; i += 1) lines.join(`k${i}`, 'exclusive').leave();
    expect(lines.size).toBe(1);
    expect(lines.waiting('busy', 'shared')).toBe(1);
    const second = lines.join('busy', 'shared');
    expect(second.isHead).toBe(false);
    held.leave();
    expect(second.isHead).toBe(true);
    second.leave();
    expect(lines.size).toBe(0);
  });

  it('the memory store: state of released keys is reused, then forgotten, and size counts keys in use', async () => {
    const store = new MemoryLockStore();
    const provider = new MemoryLockProvider({ store });
    for (let i = 0; i < 500; i += 1) {
      const lock = await provider.acquire(`key-${i % 200}`, { ttlMs: 60_000 });
      expect(store.size).toBe(1);
      expect(await lock.release()).toBe(true);
      expect(store.size).toBe(0);
    }
    const kept = await provider.acquire('kept');
    const shared = await Promise.all(Array.from({ length: 20 }, () => provider.acquire('many-readers', { mode: 'shared' })));
    expect(store.size).toBe(2);
    expect((await provider.inspect('many-readers'))?.holders).toHaveLength(20);
    // Holders are looked up by owner id whatever their number.
    for (const lock of shared.reverse()) expect(await lock.release()).toBe(true);
    expect(await provider.inspect('many-readers')).toBeUndefined();
    expect(await kept.release()).toBe(true);
    expect(store.size).toBe(0);
    await provider.close();
  });

  it('the memory store: holders that expire together all lose the lock (their handlers call back into the store), and a waiter gets it', async () => {
    const store = new MemoryLockStore();
    const [readers, writer] = [new MemoryLockProvider({ store }), new MemoryLockProvider({ store })];
    const held = await Promise.all([readers.acquire('expiring', { mode: 'shared', ttlMs: 30, autoExtend: false }), readers.acquire('expiring', { mode: 'shared', ttlMs: 30, autoExtend: false })]);
    const lost = held.map((lock) => new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true })));
    const next = await writer.acquire('expiring', { waitMs: 5_000 });
    for (const reason of await Promise.all(lost)) expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'expired' });
    expect(next.isHeld()).toBe(true);
    expect((await writer.inspect('expiring'))?.holders.map((holder) => holder.ownerId)).toEqual([next.ownerId]);
    await next.release();
    expect(store.size).toBe(0);
    await Promise.all([readers.close(), writer.close()]);
  });
});

describe('what a backend is handed', () => {
  it('observer and request functions still work unbound, as backends may pass them on', async () => {
    let observer: GrantObserver | undefined;
    let contendedOnce: (() => void) | undefined;
    const backend: LockBackend = {
      name: 'bare-functions',
      capabilities: normalizeCapabilities({ fencing: 'per-key', extend: true, lossDetection: true }),
      async acquire(request: BackendAcquireRequest): Promise<BackendGrant> {
        observer = request.observer;
        contendedOnce = request.contended;
        return { fencingToken: 1n, validUntil: monotonicNow() + 60_000, extend: async () => monotonicNow() + 60_000, release: async () => true };
      },
      inspect: async () => undefined,
      close: async () => undefined,
    };
    const provider = new BaseLockProvider(backend);
    const events: string[] = [];
    for (const event of ['contended', 'uncertain', 'recovered', 'extended', 'lost'] as const) provider.on(event, () => events.push(event));
    const lock = await provider.acquire('bare');
    const { uncertain, recovered, renewed, lost } = observer!;
    uncertain();
    expect(lock.state).toBe('uncertain');
    recovered();
    expect(lock.state).toBe('held');
    renewed(monotonicNow() + 120_000);
    contendedOnce!();
    lost(lockLostError('bare', 'taken-over'));
    expect(lock.state).toBe('lost');
    expect(events).toEqual(['uncertain', 'recovered', 'extended', 'contended', 'lost']);
    await provider.close();
  });
});
