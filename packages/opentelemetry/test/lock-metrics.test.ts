import { randomUUID } from 'node:crypto';
import { MemoryLockProvider, isLockError, type LockError } from '@fencelock/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ACQUIRE_DURATION_BUCKETS_S,
  AttributeName,
  HOLD_DURATION_BUCKETS_S,
  MetricName,
  SpanName,
  instrumentLockProvider,
} from '../src/index.js';
import { nextEvent, recordEvents } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

const BACKEND = { [AttributeName.BACKEND]: 'memory' };

function uniqueKey(name: string): string {
  return `otel:${name}:${randomUUID()}`;
}

async function rejection(promise: Promise<unknown>): Promise<LockError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!isLockError(error)) throw new Error(`expected a LockError, got ${String(error)}`);
  return error;
}

describe('instrumentLockProvider metrics (MemoryLockProvider)', () => {
  let otel: OtelHarness;
  let locks: MemoryLockProvider;

  beforeEach(() => {
    otel = new OtelHarness();
    locks = new MemoryLockProvider();
  });

  afterEach(async () => {
    await locks.close();
    await otel.shutdown();
  });

  it('records one acquire-duration and one hold-duration sample per acquisition, in seconds', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const acquired = recordEvents(locks, 'acquired');
    const released = recordEvents(locks, 'released');
    const key = uniqueKey('count');
    for (let i = 0; i < 5; i += 1) {
      const lock = await locks.acquire(key);
      await lock.release();
    }
    const metrics = await otel.collect();
    const acquire = metrics.histogram(MetricName.ACQUIRE_DURATION, { ...BACKEND, [AttributeName.OUTCOME]: 'acquired' });
    expect(acquire.count).toBe(5);
    expect(acquire.sum).toBeCloseTo(acquired.reduce((total, event) => total + event.waitedMs, 0) / 1_000, 9);
    expect(acquire.boundaries).toEqual(ACQUIRE_DURATION_BUCKETS_S);
    const hold = metrics.histogram(MetricName.HOLD_DURATION, { ...BACKEND, [AttributeName.OUTCOME]: 'released' });
    expect(hold.count).toBe(5);
    expect(hold.sum).toBeCloseTo(released.reduce((total, event) => total + event.heldMs, 0) / 1_000, 9);
    expect(hold.boundaries).toEqual(HOLD_DURATION_BUCKETS_S);
    expect(metrics.sum(MetricName.CONTENTIONS)).toBe(0);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });

  it('tracks the number of held locks by mode, and brings it back to zero on release', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const exclusive = await locks.acquire(uniqueKey('held-a'));
    const sharedKey = uniqueKey('held-shared');
    const reader1 = await locks.acquire(sharedKey, { mode: 'shared' });
    const reader2 = await locks.acquire(sharedKey, { mode: 'shared' });
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOCK_COUNT, { [AttributeName.STATE]: 'held', [AttributeName.MODE]: 'exclusive' })).toBe(1);
    expect(metrics.sum(MetricName.LOCK_COUNT, { [AttributeName.STATE]: 'held', [AttributeName.MODE]: 'shared' })).toBe(2);
    await reader1.release();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOCK_COUNT, { [AttributeName.MODE]: 'shared' })).toBe(1);
    await reader2.release();
    await exclusive.release();
    // Releasing twice emits nothing and must not count twice.
    expect(await exclusive.release()).toBe(false);
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
    expect(metrics.histogram(MetricName.HOLD_DURATION).count).toBe(3);
  });

  it('counts a contended acquisition once, and marks its duration sample as contended', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('contended');
    const holder = await locks.acquire(key);
    const contended = nextEvent(locks, 'contended');
    const waiter = locks.acquire(key, { waitMs: 10_000 });
    await contended;
    await holder.release();
    await (await waiter).release();
    // tryAcquire on a held key: a contention, and a sample with outcome "declined".
    const blocker = await locks.acquire(key);
    expect(await locks.tryAcquire(key)).toBeUndefined();
    await blocker.release();

    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.CONTENTIONS, { ...BACKEND, [AttributeName.MODE]: 'exclusive' })).toBe(2);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.CONTENDED]: true }).count).toBe(1);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.CONTENDED]: false }).count).toBe(2);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.OUTCOME]: 'declined' }).count).toBe(1);
    expect(metrics.sum(MetricName.TIMEOUTS)).toBe(0);
  });

  it('records an acquire that failed (the provider closed under it) with outcome "failed" and its error type', async () => {
    const closing = new MemoryLockProvider({ store: locks.store });
    using _ = instrumentLockProvider(closing, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider });
    const key = uniqueKey('failed');
    const holder = await locks.acquire(key);
    const contended = nextEvent(closing, 'contended');
    const waiter = closing.acquire(key, { waitMs: 10_000 });
    await contended;
    await closing.close();
    expect((await rejection(waiter)).code).toBe('LOCK_BACKEND_UNAVAILABLE');
    await holder.release();

    const metrics = await otel.collect();
    const failed = metrics.histogram(MetricName.ACQUIRE_DURATION, {
      [AttributeName.OUTCOME]: 'failed',
      [AttributeName.ERROR_TYPE]: 'LOCK_BACKEND_UNAVAILABLE',
    });
    expect(failed.count).toBe(1);
    const spans = otel.spans(SpanName.ACQUIRE).filter((span) => span.attributes[AttributeName.OUTCOME] === 'failed');
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes[AttributeName.ERROR_TYPE]).toBe('LOCK_BACKEND_UNAVAILABLE');
  });

  it('counts a timeout and records its wait with outcome "timeout"', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('timeout');
    const holder = await locks.acquire(key);
    const timeouts = recordEvents(locks, 'timeout');
    const error = await rejection(locks.acquire(key, { waitMs: 20 }));
    expect(error.code).toBe('LOCK_TIMEOUT');
    await holder.release();

    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.TIMEOUTS, { ...BACKEND, [AttributeName.MODE]: 'exclusive' })).toBe(1);
    const waited = metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.OUTCOME]: 'timeout' });
    expect(waited.count).toBe(1);
    expect(waited.sum).toBeCloseTo((timeouts[0]?.waitedMs ?? Number.NaN) / 1_000, 9);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.OUTCOME]: 'acquired' }).count).toBe(1);
  });

  it('records an aborted acquisition with outcome "aborted", not as a timeout', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('aborted');
    const holder = await locks.acquire(key);
    const controller = new AbortController();
    const contended = nextEvent(locks, 'contended');
    const waiter = rejection(locks.acquire(key, { waitMs: 10_000, signal: controller.signal }));
    await contended;
    controller.abort();
    expect((await waiter).code).toBe('LOCK_ABORTED');
    await holder.release();

    const metrics = await otel.collect();
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.OUTCOME]: 'aborted' }).count).toBe(1);
    expect(metrics.sum(MetricName.TIMEOUTS)).toBe(0);
  });

  it('counts a lost lock with its reason, records its hold as lost, and takes it out of the held count', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('lost');
    const lost = nextEvent(locks, 'lost');
    const lock = await locks.acquire(key, { ttlMs: 30, autoExtend: false });
    const event = await lost;
    expect(event.error.code).toBe('LOCK_LOST');
    expect(await lock.release()).toBe(false);

    const metrics = await otel.collect();
    const reason = event.error.reason;
    expect(reason).toBeDefined();
    expect(metrics.sum(MetricName.LOSSES, { ...BACKEND, [AttributeName.LOSS_REASON]: reason })).toBe(1);
    expect(metrics.sum(MetricName.LOSSES)).toBe(1);
    const hold = metrics.histogram(MetricName.HOLD_DURATION, { [AttributeName.OUTCOME]: 'lost' });
    expect(hold.count).toBe(1);
    expect(hold.sum).toBeCloseTo(event.heldMs / 1_000, 9);
    expect(metrics.histogram(MetricName.HOLD_DURATION, { [AttributeName.OUTCOME]: 'released' }).count).toBe(0);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });

  it('counts a late renewal and a release that could not reach the backend', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('late');
    const lock = await locks.acquire(key, { ttlMs: 900 });
    const late = nextEvent(locks, 'renewal-late');
    // The renewal is due at a third of the TTL; the loop is blocked until well after it.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 450);
    await late;
    await lock.release();
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.LATE_RENEWALS, BACKEND)).toBe(1);
    expect(metrics.sum(MetricName.RELEASE_FAILURES)).toBe(0);
    // A release whose backend call fails: the memory store is made to throw for this one call.
    const failing = await locks.acquire(uniqueKey('release-fails'));
    const store = locks.store as unknown as { release: (key: string, ownerId: string) => boolean };
    const original = store.release;
    store.release = () => {
      store.release = original;
      throw new Error('unreachable');
    };
    const failed = nextEvent(locks, 'release-failed');
    await failing.release();
    expect((await failed).willRetry).toBe(true);
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.RELEASE_FAILURES, BACKEND)).toBe(1);
  });

  it('records a release that finds the lock already gone on the backend as "not_held", not as a loss', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('not-held');
    const lock = await locks.acquire(key);
    // The backend drops the lock behind the holder's back (as an operator deleting the key would).
    expect(locks.store.release(key, lock.ownerId)).toBe(true);
    expect(await lock.release()).toBe(false);

    const metrics = await otel.collect();
    expect(metrics.histogram(MetricName.HOLD_DURATION, { [AttributeName.OUTCOME]: 'not_held' }).count).toBe(1);
    expect(metrics.histogram(MetricName.HOLD_DURATION, { [AttributeName.OUTCOME]: 'released' }).count).toBe(0);
    expect(metrics.sum(MetricName.LOSSES)).toBe(0);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });

  it('counts a provider shutdown as the loss of each lock still held', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    await locks.acquire(uniqueKey('closed-1'));
    await locks.acquire(uniqueKey('closed-2'));
    await locks.close();
    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOSSES, { [AttributeName.LOSS_REASON]: 'provider-closed' })).toBe(2);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });

  it('counts manual and automatic extensions apart', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const manual = await locks.acquire(uniqueKey('extend-manual'), { autoExtend: false });
    await manual.extend();
    await manual.extend(5_000);
    await manual.release();
    const automatic = recordEvents(locks, 'extended');
    const firstAutomatic = nextEvent(locks, 'extended', (event) => event.automatic);
    // Long enough that a loaded machine still extends before the validity runs out.
    const auto = await locks.acquire(uniqueKey('extend-auto'), { ttlMs: 600 });
    await firstAutomatic;
    await auto.release();

    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.EXTENSIONS, { [AttributeName.EXTENSION_AUTOMATIC]: false })).toBe(2);
    expect(metrics.sum(MetricName.EXTENSIONS, { [AttributeName.EXTENSION_AUTOMATIC]: true })).toBe(
      automatic.filter((event) => event.automatic).length,
    );
    expect(metrics.sum(MetricName.EXTENSIONS, { [AttributeName.EXTENSION_AUTOMATIC]: true })).toBeGreaterThanOrEqual(1);
  });

  it('records no key attribute by default', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('no-keys');
    const holder = await locks.acquire(key);
    expect(await locks.tryAcquire(key)).toBeUndefined();
    await holder.release();
    const metrics = await otel.collect();
    for (const metric of metrics.metrics) {
      for (const attributes of metrics.attributeSets(metric.descriptor.name)) {
        expect(attributes).not.toHaveProperty(AttributeName.KEY);
        expect(Object.values(attributes)).not.toContain(key);
      }
    }
  });

  it('records keys when asked, as they are or mapped by a function', async () => {
    const other = new MemoryLockProvider({ store: locks.store });
    using _raw = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, recordKeys: true });
    using _mapped = instrumentLockProvider(other, {
      meterProvider: otel.meterProvider,
      recordKeys: (key) => key.split(':')[1],
      attributes: { 'fencelock.provider.instance': 'mapped' },
    });
    const key = uniqueKey('keys');
    await (await locks.acquire(key)).release();
    await (await other.acquire(key)).release();
    await other.close();

    const metrics = await otel.collect();
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.KEY]: key }).count).toBe(1);
    const mapped = metrics.points(MetricName.ACQUIRE_DURATION, { 'fencelock.provider.instance': 'mapped' });
    expect(mapped).toHaveLength(1);
    expect(mapped[0]?.attributes[AttributeName.KEY]).toBe('keys');
  });

  it('stops recording after close(), and takes locks still held out of the held count', async () => {
    const instrumentation = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('closed');
    const stillHeld = await locks.acquire(key);
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(1);
    instrumentation.close();
    instrumentation.close();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);

    await stillHeld.release();
    for (let i = 0; i < 3; i += 1) await (await locks.acquire(key)).release();
    const holder = await locks.acquire(key);
    await rejection(locks.acquire(key, { waitMs: 5 }));
    await holder.release();

    metrics = await otel.collect();
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION).count).toBe(1);
    expect(metrics.histogram(MetricName.HOLD_DURATION).count).toBe(0);
    expect(metrics.sum(MetricName.TIMEOUTS)).toBe(0);
    expect(metrics.sum(MetricName.CONTENTIONS)).toBe(0);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });

  it('does not count the release of a lock granted before it was instrumented', async () => {
    const key = uniqueKey('before');
    const early = await locks.acquire(key);
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    await early.release();
    const metrics = await otel.collect();
    // The hold is measured (its event says how long it was held); the held count stays at zero, not −1.
    expect(metrics.histogram(MetricName.HOLD_DURATION).count).toBe(1);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });
});
