import { randomUUID } from 'node:crypto';
import { MemoryLockProvider, isLockError } from '@fencelock/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, MetricName, SpanName, instrumentLockProvider } from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

const SEMAPHORE = { [AttributeName.BACKEND]: 'memory', [AttributeName.MODE]: 'semaphore' };

function uniqueKey(name: string): string {
  return `otel-sem:${name}:${randomUUID()}`;
}

describe('instrumentLockProvider on counting semaphores (MemoryLockProvider)', () => {
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

  it('counts the permits held, by limit, a multi-permit handle by its permits, and brings them back to zero', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('permits');
    const two = await locks.acquireSemaphore(key, { limit: 3, permits: 2 });
    const one = await locks.acquireSemaphore(key, { limit: 3 });
    const other = await locks.acquireSemaphore(uniqueKey('other'), { limit: 5 });
    const lock = await locks.acquire(key);
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT, { ...SEMAPHORE, [AttributeName.STATE]: 'held', [AttributeName.SEMAPHORE_LIMIT]: 3 })).toBe(3);
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT, { [AttributeName.SEMAPHORE_LIMIT]: 5 })).toBe(1);
    // Handles, not permits, in the lock count; the lock of the same key is not a permit.
    expect(metrics.sum(MetricName.LOCK_COUNT, { [AttributeName.MODE]: 'semaphore' })).toBe(3);
    expect(metrics.sum(MetricName.LOCK_COUNT, { [AttributeName.MODE]: 'exclusive' })).toBe(1);
    await two.release();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT, { [AttributeName.SEMAPHORE_LIMIT]: 3 })).toBe(1);
    await one.release();
    await other.release();
    await lock.release();
    // A second release emits nothing and must not count twice.
    expect(await one.release()).toBe(false);
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });

  it('counts semaphore calls waiting for permits, one by one, until they are granted or time out', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = uniqueKey('waiters');
    const holder = await locks.acquireSemaphore(key, { limit: 1 });
    const firstContended = nextEvent(locks, 'contended', (event) => event.key === key);
    const first = locks.acquireSemaphore(key, { limit: 1, waitMs: 10_000 });
    await firstContended;
    expect((await otel.collect()).sum(MetricName.SEMAPHORE_WAITER_COUNT, SEMAPHORE)).toBe(1);
    const secondContended = nextEvent(locks, 'contended', (event) => event.key === key);
    const second = locks.acquireSemaphore(key, { limit: 1, waitMs: 10_000 });
    await secondContended;
    // A lock waiting on the same key is not a semaphore waiter.
    const lockHolder = await locks.acquire(key);
    const lockContended = nextEvent(locks, 'contended', (event) => event.key === key && event.mode === 'exclusive');
    const lockWaiter = locks.acquire(key, { waitMs: 10_000 });
    await lockContended;
    expect((await otel.collect()).sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(2);

    await holder.release();
    const granted = await first;
    expect((await otel.collect()).sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(1);
    await granted.release();
    await (await second).release();
    await lockHolder.release();
    await (await lockWaiter).release();
    expect((await otel.collect()).sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);

    // A wait that runs out, and a tryAcquireSemaphore that finds no permit, end their waits too.
    const blocker = await locks.acquireSemaphore(key, { limit: 1 });
    const timedOut = await locks.acquireSemaphore(key, { limit: 1, waitMs: 20 }).catch((error: unknown) => error);
    expect(isLockError(timedOut, 'LOCK_TIMEOUT')).toBe(true);
    expect(await locks.tryAcquireSemaphore(key, { limit: 1 })).toBeUndefined();
    await blocker.release();
    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.TIMEOUTS, SEMAPHORE)).toBe(1);
  });

  it('puts the limit and the permits on semaphore acquire and hold spans, and ends the hold span on release', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider, holdSpans: true });
    const key = uniqueKey('spans');
    const handle = await locks.acquireSemaphore(key, { limit: 4, permits: 3 });
    await handle.release();
    const lock = await locks.acquire(uniqueKey('lock'));
    await lock.release();

    const [acquire, lockAcquire] = otel.spans(SpanName.ACQUIRE);
    expect(acquire?.attributes).toMatchObject({
      ...SEMAPHORE,
      [AttributeName.OUTCOME]: 'acquired',
      [AttributeName.SEMAPHORE_LIMIT]: 4,
      [AttributeName.SEMAPHORE_PERMITS]: 3,
      [AttributeName.OWNER_ID]: handle.ownerId,
      [AttributeName.FENCING_TOKEN]: handle.fencingToken?.toString(),
    });
    expect(lockAcquire?.attributes[AttributeName.SEMAPHORE_LIMIT]).toBeUndefined();
    const [hold] = otel.spans(SpanName.HOLD);
    expect(hold?.attributes).toMatchObject({ ...SEMAPHORE, [AttributeName.SEMAPHORE_LIMIT]: 4, [AttributeName.SEMAPHORE_PERMITS]: 3, [AttributeName.OUTCOME]: 'released' });
    expect(hold?.ended).toBe(true);
  });

  it('records a limit mismatch as a failed acquisition, and takes a lost permit out of the count', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider });
    const key = uniqueKey('mismatch');
    const lost = nextEvent(locks, 'lost', (event) => event.key === key);
    await locks.acquireSemaphore(key, { limit: 2, ttlMs: 200, autoExtend: false });
    const mismatch = await locks.acquireSemaphore(key, { limit: 3, waitMs: 0 }).catch((error: unknown) => error);
    expect(isLockError(mismatch, 'LOCK_LIMIT_MISMATCH')).toBe(true);
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT, { [AttributeName.SEMAPHORE_LIMIT]: 2 })).toBe(1);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { ...SEMAPHORE, [AttributeName.OUTCOME]: 'failed', [AttributeName.ERROR_TYPE]: 'LOCK_LIMIT_MISMATCH' }).count).toBe(1);
    await lost;
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LOSSES, SEMAPHORE)).toBe(1);
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);
  });

  it('records the key on semaphore series only with recordKeys, and zeroes them at close()', async () => {
    const instrumentation = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, recordKeys: (key) => key.split(':')[1] });
    const key = uniqueKey('keys');
    const holder = await locks.acquireSemaphore(key, { limit: 1 });
    const contended = nextEvent(locks, 'contended', (event) => event.key === key);
    const waiter = locks.acquireSemaphore(key, { limit: 1, waitMs: 10_000 });
    await contended;
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT, { [AttributeName.KEY]: 'keys' })).toBe(1);
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT, { [AttributeName.KEY]: 'keys' })).toBe(1);
    instrumentation.close();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);
    await holder.release();
    await (await waiter).release();
    // Nothing is recorded after close(): the counts stay at zero.
    expect((await otel.collect()).sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);
  });
});
