import { randomUUID } from 'node:crypto';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context } from '@opentelemetry/api';
import { FencingGuard, MemoryLockProvider, isLockError } from '@fencelock/core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  AttributeName,
  MetricName,
  SpanEventName,
  createFenceRejectionRecorder,
  instrumentFencingGuard,
  instrumentLockProvider,
} from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

function uniqueKey(name: string): string {
  return `otel:${name}:${randomUUID()}`;
}

describe('fence rejections', () => {
  let otel: OtelHarness;

  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    context.disable();
  });
  beforeEach(() => {
    otel = new OtelHarness();
  });
  afterEach(async () => {
    await otel.shutdown();
  });

  it("counts the write a FencingGuard refuses from a holder whose lock expired, and none it accepts", async () => {
    const locks = new MemoryLockProvider();
    const guard = new FencingGuard();
    using _locks = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    using _guard = instrumentFencingGuard(guard, {
      meterProvider: otel.meterProvider,
      attributes: { 'fencelock.fence.resource': 'report' },
    });
    const key = uniqueKey('fenced');
    // A holder pauses past its TTL; a second holder takes over and writes; the first one's late write is refused.
    const lost = nextEvent(locks, 'lost');
    const paused = await locks.acquire(key, { ttlMs: 30, autoExtend: false });
    await lost;
    const successor = await locks.acquire(key);
    expect(guard.check(key, successor.fencingToken)).toBe(true);
    expect(guard.check(key, successor.fencingToken)).toBe(true);
    let error: unknown;
    try {
      guard.assert(key, paused.fencingToken);
    } catch (caught) {
      error = caught;
    }
    expect(isLockError(error, 'LOCK_STALE_TOKEN')).toBe(true);
    expect(guard.check(key, paused.fencingToken)).toBe(false);
    await successor.release();
    await locks.close();

    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.FENCE_REJECTIONS)).toBe(2);
    expect(metrics.sum(MetricName.FENCE_REJECTIONS, { 'fencelock.fence.resource': 'report' })).toBe(2);
    expect(metrics.attributeSets(MetricName.FENCE_REJECTIONS)).toEqual([{ 'fencelock.fence.resource': 'report' }]);
    expect(metrics.sum(MetricName.LOSSES)).toBe(1);
  });

  it('adds a rejection event, with both tokens, to the span active at the refused write', async () => {
    const guard = new FencingGuard();
    using _ = instrumentFencingGuard(guard, { meterProvider: otel.meterProvider, recordKeys: true });
    const key = uniqueKey('event');
    guard.check(key, 7n);
    const tracer = otel.tracerProvider.getTracer('test');
    tracer.startActiveSpan('write', (span) => {
      guard.check(key, 5n);
      span.end();
    });
    // Outside any span: counted, no event anywhere.
    guard.check(key, 6n);

    const [write] = otel.spans('write');
    expect(write?.events.map((event) => event.name)).toEqual([SpanEventName.FENCE_REJECTED]);
    expect(write?.events[0]?.attributes).toEqual({
      [AttributeName.KEY]: key,
      [AttributeName.FENCE_TOKEN]: '5',
      [AttributeName.FENCE_HIGHEST_TOKEN]: '7',
    });
    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.FENCE_REJECTIONS, { [AttributeName.KEY]: key })).toBe(2);
  });

  it('stops counting after close()', async () => {
    const guard = new FencingGuard();
    const instrumentation = instrumentFencingGuard(guard, { meterProvider: otel.meterProvider });
    const key = uniqueKey('closed');
    guard.check(key, 2n);
    guard.check(key, 1n);
    instrumentation.close();
    guard.check(key, 1n);
    guard.check(key, 0n);
    expect(guard.stats.rejected).toBe(3);
    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.FENCE_REJECTIONS)).toBe(1);
  });

  it('records rejections a resource detects itself, without span events when turned off', async () => {
    const record = createFenceRejectionRecorder({ meterProvider: otel.meterProvider, spanEvents: false });
    const tracer = otel.tracerProvider.getTracer('test');
    tracer.startActiveSpan('sql-update', (span) => {
      // e.g. `UPDATE … WHERE fence <= $token` answered 0 rows
      record({ key: uniqueKey('sql'), token: 3n });
      span.end();
    });
    expect(otel.spans('sql-update')[0]?.events).toEqual([]);
    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.FENCE_REJECTIONS)).toBe(1);
    expect(metrics.attributeSets(MetricName.FENCE_REJECTIONS)).toEqual([{}]);
  });
});
