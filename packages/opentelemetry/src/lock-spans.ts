import { SpanKind, SpanStatusCode, context, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { monotonicNow } from '@fencelock/core';
import { AttributeName, SpanName } from './names.js';

/**
 * @internal Records a finished `fencelock.acquire` span. Core reports an acquisition once it has
 * ended (with how long it waited), so the span is made afterwards with its real start and end times,
 * `performance.now()` values as the API's `TimeInput` allows. Its parent is the context active where
 * the event fires, which is the caller's: core emits the event inside the `acquire` call.
 */
export function recordAcquireSpan(
  tracer: Tracer,
  attributes: Attributes,
  waitedMs: number,
  failure?: { readonly code: string; readonly message: string },
): void {
  const end = monotonicNow();
  const span = tracer.startSpan(
    SpanName.ACQUIRE,
    { kind: SpanKind.INTERNAL, startTime: end - waitedMs, attributes: { ...attributes, [AttributeName.WAITED_MS]: waitedMs } },
    context.active(),
  );
  if (failure !== undefined) {
    span.setAttribute(AttributeName.ERROR_TYPE, failure.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
  }
  span.end(end);
}

/**
 * @internal Starts a `fencelock.hold` span at the grant, as a child of the caller's context. It is
 * never made the active span: the caller's code runs in its own context, so nothing it does while
 * holding the lock becomes a child of a span that may stay open for hours.
 */
export function startHoldSpan(tracer: Tracer, attributes: Attributes): Span {
  return tracer.startSpan(SpanName.HOLD, { kind: SpanKind.INTERNAL, startTime: monotonicNow(), attributes }, context.active());
}

/** @internal Ends a hold span with how the hold ended. */
export function endHoldSpan(
  span: Span,
  attributes: Attributes,
  failure?: { readonly code: string; readonly message: string },
): void {
  span.setAttributes(attributes);
  if (failure !== undefined) {
    span.setAttribute(AttributeName.ERROR_TYPE, failure.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
  }
  span.end(monotonicNow());
}
