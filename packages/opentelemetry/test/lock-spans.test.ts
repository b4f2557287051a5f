import { randomUUID } from 'node:crypto';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { SpanKind, SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from './support/hr-time.js';
import { MemoryLockProvider, isLockError } from '@fencelock/core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, SpanName, instrumentLockProvider } from '../src/index.js';
import { nextEvent, recordEvents } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

function uniqueKey(name: string): string {
  return `otel:${name}:${randomUUID()}`;
}

/** Runs `fn` inside an active span of `otel`'s tracer, ends it, and returns its id with fn's result. */
async function inParentSpan<T>(otel: OtelHarness, fn: (parent: Span) => Promise<T>): Promise<{ parentId: string; result: T }> {
  const tracer = otel.tracerProvider.getTracer('test');
  return tracer.startActiveSpan('parent', async (parent) => {
    try {
      const result = await fn(parent);
      return { parentId: parent.spanContext().spanId, result };
    } finally {
      parent.end();
    }
  });
}

describe('instrumentLockProvider spans (MemoryLockProvider)', () => {
  let otel: OtelHarness;
  let locks: MemoryLockProvider;

  beforeAll(() => {
    // Parenting follows the caller's context through awaits only with an async context manager.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    context.disable();
  });

  beforeEach(() => {
    otel = new OtelHarness();
    locks = new MemoryLockProvider();
  });

  afterEach(async () => {
    await locks.close();
    await otel.shutdown();
  });

  it('makes one acquire span per acquisition, a child of the caller, lasting exactly the wait', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider });
    const acquired = recordEvents(locks, 'acquired');
    const key = uniqueKey('acquire');
    const { parentId, result: lock } = await inParentSpan(otel, async () => {
      const lock = await locks.acquire(key);
      await lock.release();
      return lock;
    });

    const [span, ...others] = otel.spans(SpanName.ACQUIRE);
    expect(others).toHaveLength(0);
    expect(span?.kind).toBe(SpanKind.INTERNAL);
    expect(span?.status.code).toBe(SpanStatusCode.UNSET);
    expect(span?.parentSpanContext?.spanId).toBe(parentId);
    expect(span?.attributes).toMatchObject({
      [AttributeName.BACKEND]: 'memory',
      [AttributeName.MODE]: 'exclusive',
      [AttributeName.OUTCOME]: 'acquired',
      [AttributeName.CONTENDED]: false,
      [AttributeName.OWNER_ID]: lock.ownerId,
      [AttributeName.FENCING_TOKEN]: String(lock.fencingToken),
      [AttributeName.WAITED_MS]: acquired[0]?.waitedMs,
    });
    expect(span?.attributes).not.toHaveProperty(AttributeName.KEY);
    expect(hrTimeToMilliseconds(span?.duration ?? [0, 0])).toBeCloseTo(acquired[0]?.waitedMs ?? Number.NaN, 3);
    // No hold span unless asked for.
    expect(otel.spans(SpanName.HOLD)).toHaveLength(0);
  });

  it('keeps a contended acquire span under its own caller although another caller released the lock', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider });
    const acquired = recordEvents(locks, 'acquired');
    const key = uniqueKey('contended');
    const holder = await locks.acquire(key);
    const contended = nextEvent(locks, 'contended');
    const waiting = inParentSpan(otel, async () => (await locks.acquire(key, { waitMs: 10_000 })).release());
    await contended;
    await inParentSpan(otel, () => holder.release());
    const { parentId } = await waiting;

    const spans = otel.spans(SpanName.ACQUIRE).filter((span) => span.attributes[AttributeName.CONTENDED] === true);
    expect(spans).toHaveLength(1);
    expect(spans[0]?.parentSpanContext?.spanId).toBe(parentId);
    const waited = acquired.find((event) => event.contended)?.waitedMs ?? Number.NaN;
    expect(hrTimeToMilliseconds(spans[0]?.duration ?? [0, 0])).toBeCloseTo(waited, 3);
  });

  it('marks a timed-out acquire span as an error with error.type LOCK_TIMEOUT', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider });
    const key = uniqueKey('timeout');
    const holder = await locks.acquire(key);
    const error = await locks.acquire(key, { waitMs: 10 }).catch((reason: unknown) => reason);
    expect(isLockError(error, 'LOCK_TIMEOUT')).toBe(true);
    await holder.release();

    const failed = otel.spans(SpanName.ACQUIRE).filter((span) => span.status.code === SpanStatusCode.ERROR);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.attributes).toMatchObject({ [AttributeName.OUTCOME]: 'timeout', [AttributeName.ERROR_TYPE]: 'LOCK_TIMEOUT' });
    expect(failed[0]?.attributes).not.toHaveProperty(AttributeName.OWNER_ID);
  });

  it('marks an aborted acquire span as an error with error.type LOCK_ABORTED', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider });
    const key = uniqueKey('aborted');
    const holder = await locks.acquire(key);
    const controller = new AbortController();
    const contended = nextEvent(locks, 'contended');
    const waiter = locks.acquire(key, { signal: controller.signal }).catch((reason: unknown) => reason);
    await contended;
    controller.abort();
    expect(isLockError(await waiter, 'LOCK_ABORTED')).toBe(true);
    await holder.release();

    const failed = otel.spans(SpanName.ACQUIRE).filter((span) => span.status.code === SpanStatusCode.ERROR);
    expect(failed.map((span) => span.attributes[AttributeName.ERROR_TYPE])).toEqual(['LOCK_ABORTED']);
  });

  it('makes hold spans when asked: child of the caller, never the active span, ended by the release', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider, holdSpans: true });
    const key = uniqueKey('hold');
    const tracer = otel.tracerProvider.getTracer('test');
    const { parentId, result } = await inParentSpan(otel, async (parent) => {
      const lock = await locks.acquire(key);
      // Work done while holding the lock stays in the caller's context.
      const activeWhileHeld = trace.getSpan(context.active());
      tracer.startSpan('work').end();
      await lock.release();
      return { lock, activeWhileHeld, parent };
    });

    expect(result.activeWhileHeld).toBe(result.parent);
    expect(otel.spans('work')[0]?.parentSpanContext?.spanId).toBe(parentId);
    const [hold, ...others] = otel.spans(SpanName.HOLD);
    expect(others).toHaveLength(0);
    expect(hold?.parentSpanContext?.spanId).toBe(parentId);
    expect(hold?.status.code).toBe(SpanStatusCode.UNSET);
    expect(hold?.attributes).toMatchObject({
      [AttributeName.OUTCOME]: 'released',
      [AttributeName.OWNER_ID]: result.lock.ownerId,
      [AttributeName.FENCING_TOKEN]: String(result.lock.fencingToken),
    });
  });

  it('ends a hold span with an error when the lock is lost', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider, holdSpans: true });
    const lost = nextEvent(locks, 'lost');
    await locks.acquire(uniqueKey('hold-lost'), { ttlMs: 30, autoExtend: false });
    const event = await lost;

    const [hold] = otel.spans(SpanName.HOLD);
    expect(hold?.status.code).toBe(SpanStatusCode.ERROR);
    expect(hold?.attributes).toMatchObject({
      [AttributeName.OUTCOME]: 'lost',
      [AttributeName.ERROR_TYPE]: 'LOCK_LOST',
      [AttributeName.LOSS_REASON]: event.error.reason,
      [AttributeName.HELD_MS]: event.heldMs,
    });
    // The loss message names the key; without recordKeys it stays out of the span.
    expect(hold?.status.message).not.toContain('otel:hold-lost');
  });

  it('ends a hold span with an error when the release finds the lock already gone', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider, holdSpans: true });
    const key = uniqueKey('hold-not-held');
    const lock = await locks.acquire(key);
    locks.store.release(key, lock.ownerId);
    await lock.release();
    const [hold] = otel.spans(SpanName.HOLD);
    expect(hold?.status.code).toBe(SpanStatusCode.ERROR);
    expect(hold?.attributes).toMatchObject({ [AttributeName.OUTCOME]: 'not_held', [AttributeName.ERROR_TYPE]: 'LOCK_NOT_HELD' });
  });

  it('ends hold spans still open when the instrumentation is closed', async () => {
    const instrumentation = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider, holdSpans: true });
    const lock = await locks.acquire(uniqueKey('hold-closed'));
    expect(otel.spans(SpanName.HOLD)).toHaveLength(0);
    instrumentation.close();
    expect(otel.spans(SpanName.HOLD).map((span) => span.attributes[AttributeName.OUTCOME])).toEqual(['untracked']);
    await lock.release();
    expect(otel.spans(SpanName.HOLD)).toHaveLength(1);
  });

  it('puts the key on spans only when recordKeys is set', async () => {
    using _ = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider, recordKeys: true, holdSpans: true });
    const key = uniqueKey('span-key');
    await (await locks.acquire(key)).release();
    expect(otel.spans(SpanName.ACQUIRE)[0]?.attributes[AttributeName.KEY]).toBe(key);
    expect(otel.spans(SpanName.HOLD)[0]?.attributes[AttributeName.KEY]).toBe(key);
  });

  it('makes no acquire span with acquireSpans: false, and none after close()', async () => {
    const silent = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider, acquireSpans: false });
    const key = uniqueKey('no-spans');
    await (await locks.acquire(key)).release();
    silent.close();
    const closed = instrumentLockProvider(locks, { tracerProvider: otel.tracerProvider });
    closed.close();
    await (await locks.acquire(key)).release();
    expect(otel.spans()).toHaveLength(0);
  });
});
