import { randomUUID } from 'node:crypto';
import { isLockError, type LockProvider } from '@fencelock/core';
import { createRedisLockProvider } from '@fencelock/redis';
import { topology } from '@fencelock/test-infra';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, MetricName, SpanName, instrumentLockProvider } from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

const { redisUrl } = topology();
const SEMAPHORE = { [AttributeName.BACKEND]: 'redis', [AttributeName.MODE]: 'semaphore' };

describe('instrumentLockProvider on counting semaphores of a real Redis (shared test-infra server)', () => {
  const prefix = `fencelock:otel-sem-test:${randomUUID()}:`;
  let otel: OtelHarness;
  let locks: LockProvider;
  let rival: LockProvider;

  beforeEach(() => {
    otel = new OtelHarness();
    locks = createRedisLockProvider({ connection: redisUrl, keyPrefix: prefix });
    rival = createRedisLockProvider({ connection: redisUrl, keyPrefix: prefix });
  });
  afterEach(async () => {
    await Promise.all([locks.close(), rival.close()]);
    await otel.shutdown();
  });

  it('counts a call waiting for permits another client holds, then the permits it gets, with the server\'s tokens on its spans', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider, holdSpans: true });
    const key = `wait:${randomUUID()}`;
    const first = await rival.acquireSemaphore(key, { limit: 2 });
    const second = await rival.acquireSemaphore(key, { limit: 2 });
    const contended = nextEvent(locks, 'contended', (event) => event.key === key);
    const waiter = locks.acquireSemaphore(key, { limit: 2, permits: 2, waitMs: 10_000 });
    await contended;
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT, SEMAPHORE)).toBe(1);
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT)).toBe(0);

    await first.release();
    // One permit free is not enough for two: still waiting.
    expect(await rival.tryAcquireSemaphore(key, { limit: 2 })).toBeDefined();
    await rival.close();
    const handle = await waiter;
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT, { ...SEMAPHORE, [AttributeName.STATE]: 'held', [AttributeName.SEMAPHORE_LIMIT]: 2 })).toBe(2);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { ...SEMAPHORE, [AttributeName.CONTENDED]: true }).count).toBe(1);
    await handle.release();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT)).toBe(0);

    const [acquire] = otel.spans(SpanName.ACQUIRE);
    expect(acquire?.attributes).toMatchObject({ ...SEMAPHORE, [AttributeName.SEMAPHORE_LIMIT]: 2, [AttributeName.SEMAPHORE_PERMITS]: 2 });
    // The token came from the server's counter, after the rival's two grants.
    expect(BigInt(String(acquire?.attributes[AttributeName.FENCING_TOKEN]))).toBe(handle.fencingToken);
    expect(handle.fencingToken).toBeGreaterThan(second.fencingToken ?? 0n);
    const [hold] = otel.spans(SpanName.HOLD);
    expect(hold?.attributes).toMatchObject({ [AttributeName.SEMAPHORE_LIMIT]: 2, [AttributeName.SEMAPHORE_PERMITS]: 2, [AttributeName.OUTCOME]: 'released' });
  });

  it('records the server\'s limit mismatch as a failed acquisition that never waited', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider });
    const key = `mismatch:${randomUUID()}`;
    const holder = await rival.acquireSemaphore(key, { limit: 2 });
    const error = await locks.acquireSemaphore(key, { limit: 3, waitMs: 5_000 }).catch((reason: unknown) => reason);
    expect(isLockError(error, 'LOCK_LIMIT_MISMATCH')).toBe(true);
    await holder.release();
    const metrics = await otel.collect();
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { ...SEMAPHORE, [AttributeName.OUTCOME]: 'failed', [AttributeName.ERROR_TYPE]: 'LOCK_LIMIT_MISMATCH' }).count).toBe(1);
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.SEMAPHORE_PERMIT_COUNT)).toBe(0);
    const spans = otel.spans(SpanName.ACQUIRE);
    expect(spans.map((span) => span.attributes[AttributeName.ERROR_TYPE])).toEqual(['LOCK_LIMIT_MISMATCH']);
  });
});
