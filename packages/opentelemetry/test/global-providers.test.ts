import { randomUUID } from 'node:crypto';
import { DiagLogLevel, diag, metrics, trace } from '@opentelemetry/api';
import { MemoryLockProvider } from '@fencelock/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MetricName, SpanName, instrumentLockProvider } from '../src/index.js';
import { OtelHarness } from './support/otel-harness.js';

describe('instrumentLockProvider with the global providers', () => {
  let otel: OtelHarness;
  let locks: MemoryLockProvider;

  beforeEach(() => {
    otel = new OtelHarness();
    locks = new MemoryLockProvider();
  });
  afterEach(async () => {
    metrics.disable();
    trace.disable();
    diag.disable();
    await locks.close();
    await otel.shutdown();
  });

  it('records into the globally registered meter and tracer providers by default', async () => {
    metrics.setGlobalMeterProvider(otel.meterProvider);
    trace.setGlobalTracerProvider(otel.tracerProvider);
    using _ = instrumentLockProvider(locks);
    await (await locks.acquire(`otel:global:${randomUUID()}`)).release();
    const collected = await otel.collect();
    expect(collected.histogram(MetricName.ACQUIRE_DURATION).count).toBe(1);
    expect(otel.spans(SpanName.ACQUIRE)).toHaveLength(1);
  });

  it('never lets a recording failure break a lock operation: it goes to the diag logger', async () => {
    const errors: string[] = [];
    diag.setLogger(
      { error: (message) => errors.push(message), warn: () => undefined, info: () => undefined, debug: () => undefined, verbose: () => undefined },
      DiagLogLevel.ERROR,
    );
    using _ = instrumentLockProvider(locks, {
      meterProvider: otel.meterProvider,
      recordKeys: () => {
        throw new Error('a broken key mapping');
      },
    });
    const lock = await locks.acquire(`otel:throwing:${randomUUID()}`);
    expect(await lock.release()).toBe(true);
    expect(errors.some((message) => message.includes('"acquired"'))).toBe(true);
    expect(errors.some((message) => message.includes('"released"'))).toBe(true);
  });
});
