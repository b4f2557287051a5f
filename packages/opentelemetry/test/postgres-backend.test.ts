import { randomUUID } from 'node:crypto';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context } from '@opentelemetry/api';
import { isLockError } from '@fencelock/core';
import { type PostgresLockProvider, createPostgresLockProvider } from '@fencelock/postgres';
import { topology } from '@fencelock/test-infra';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, MetricName, SpanName, instrumentLockProvider } from '../src/index.js';
import { nextEvent, recordEvents } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

const { postgresUrl } = topology();
const BACKEND = { [AttributeName.BACKEND]: 'postgres' };

describe('instrumentLockProvider on a real PostgreSQL (shared test-infra server)', () => {
  const namespace = `fencelock:otel-test:${randomUUID()}:`;
  let operator: pg.Client;
  let otel: OtelHarness;
  let locks: PostgresLockProvider;
  let rival: PostgresLockProvider;

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    operator = new pg.Client(postgresUrl);
    operator.on('error', () => undefined);
    // Fail with the remedy rather than with a timeout deep inside a test.
    await operator.connect().catch((error: unknown) => {
      throw new Error(`no PostgreSQL at ${postgresUrl} (${String(error)}): run \`pnpm infra:up\``);
    });
  });
  afterAll(async () => {
    context.disable();
    await operator.end();
  });
  beforeEach(() => {
    otel = new OtelHarness();
    locks = createPostgresLockProvider({ connection: postgresUrl, namespace, sessionTtlMs: 5_000 });
    rival = createPostgresLockProvider({ connection: postgresUrl, namespace, sessionTtlMs: 5_000 });
  });
  afterEach(async () => {
    await Promise.all([locks.close(), rival.close()]);
    await otel.shutdown();
  });

  it('measures every acquisition and hold, with spans under the caller across network I/O', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider });
    const acquired = recordEvents(locks, 'acquired');
    const key = `count:${randomUUID()}`;
    const tracer = otel.tracerProvider.getTracer('test');
    const parentId = await tracer.startActiveSpan('job', async (parent) => {
      for (let i = 0; i < 4; i += 1) await (await locks.acquire(key)).release();
      parent.end();
      return parent.spanContext().spanId;
    });

    const metrics = await otel.collect();
    const acquire = metrics.histogram(MetricName.ACQUIRE_DURATION, { ...BACKEND, [AttributeName.OUTCOME]: 'acquired' });
    expect(acquire.count).toBe(4);
    expect(acquire.sum).toBeCloseTo(acquired.reduce((total, event) => total + event.waitedMs, 0) / 1_000, 9);
    expect(metrics.histogram(MetricName.HOLD_DURATION, { ...BACKEND, [AttributeName.OUTCOME]: 'released' }).count).toBe(4);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
    const spans = otel.spans(SpanName.ACQUIRE);
    expect(spans).toHaveLength(4);
    expect(spans.every((span) => span.parentSpanContext?.spanId === parentId)).toBe(true);
    // Tokens from the key's durable counter: one more per acquisition.
    const tokens = spans.map((span) => BigInt(String(span.attributes[AttributeName.FENCING_TOKEN])));
    expect(tokens.map((token) => token - (tokens[0] ?? 0n))).toEqual([0n, 1n, 2n, 3n]);
  });

  it('counts contention against another session, and a timeout', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider });
    const key = `contended:${randomUUID()}`;
    const holder = await rival.acquire(key);
    const contended = nextEvent(locks, 'contended');
    const waiter = locks.acquire(key, { waitMs: 10_000 });
    await contended;
    await holder.release();
    await (await waiter).release();
    const blocker = await rival.acquire(key);
    const error = await locks.acquire(key, { waitMs: 30 }).catch((reason: unknown) => reason);
    expect(isLockError(error, 'LOCK_TIMEOUT')).toBe(true);
    await blocker.release();

    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.CONTENTIONS, BACKEND)).toBe(2);
    expect(metrics.sum(MetricName.TIMEOUTS, BACKEND)).toBe(1);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.CONTENDED]: true }).count).toBe(1);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { [AttributeName.OUTCOME]: 'timeout' }).count).toBe(1);
    expect(otel.spans(SpanName.ACQUIRE).map((span) => span.attributes[AttributeName.OUTCOME]).sort()).toEqual(['acquired', 'timeout']);
  });

  it("counts a lock lost when an operator terminated its holder's session", async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const key = `lost:${randomUUID()}`;
    const lost = nextEvent(locks, 'lost');
    await locks.acquire(key);
    await operator.query('SELECT pg_terminate_backend($1, 5000)', [locks.backendPid]);
    const event = await lost;
    expect(event.error.reason).toBe('session-lost');
    // The server agrees: another session gets the key.
    const successor = await rival.acquire(key, { waitMs: 10_000 });
    await successor.release();

    const metrics = await otel.collect();
    expect(metrics.sum(MetricName.LOSSES, { ...BACKEND, [AttributeName.LOSS_REASON]: 'session-lost' })).toBe(1);
    expect(metrics.histogram(MetricName.HOLD_DURATION, { [AttributeName.OUTCOME]: 'lost' }).count).toBe(1);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
  });
});
