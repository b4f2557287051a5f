import { context, diag, metrics, trace, type Attributes } from '@opentelemetry/api';
import type { FencingGuard } from '@fencelock/core';
import type { Instrumentation } from './instrumentation.js';
import { AttributeName, INSTRUMENTATION_SCOPE, MetricName, SpanEventName } from './names.js';
import { keyAttributeOf, type FenceInstrumentationOptions } from './options.js';

/**
 * A refused write, as a fenced resource knows it. `FencingGuard`'s `FenceRejection` is one; a
 * database that answered "0 rows" to `… WHERE fence <= $token` knows the key and the token.
 */
export interface FenceRejectionInput {
  /** The resource key. */
  readonly key: string;
  /** The token the writer presented, if known. */
  readonly token?: bigint;
  /** The highest token the resource had accepted, if known. */
  readonly highestToken?: bigint;
}

/**
 * Makes a function that records one refused write: it adds 1 to `fencelock.fence.rejections` and,
 * unless `spanEvents` is false, adds a `fencelock.fence.rejected` event (with the tokens) to the span
 * active where it is called, so the trace of the refused write shows why. For resources that compare
 * tokens themselves, e.g. a SQL update conditional on the fence column.
 *
 * @example
 * const recordRejection = createFenceRejectionRecorder({ attributes: { 'fencelock.fence.resource': 'invoices' } });
 * if (result.rowCount === 0) recordRejection({ key: 'invoice:42', token: lock.fencingToken });
 */
export function createFenceRejectionRecorder(options: FenceInstrumentationOptions = {}): (rejection: FenceRejectionInput) => void {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(INSTRUMENTATION_SCOPE);
  const rejections = meter.createCounter(MetricName.FENCE_REJECTIONS, {
    description: 'Writes a fenced resource refused because their fencing token was older than one it had accepted.',
    unit: '{rejection}',
  });
  const keyAttribute = keyAttributeOf(options.recordKeys);
  const constantAttributes = options.attributes ?? {};
  const spanEvents = options.spanEvents ?? true;
  return (rejection) => {
    try {
      const attributes: Attributes = { ...constantAttributes };
      const key = keyAttribute(rejection.key);
      if (key !== undefined) attributes[AttributeName.KEY] = key;
      rejections.add(1, attributes);
      if (!spanEvents) return;
      const span = trace.getSpan(context.active());
      if (span === undefined || !span.isRecording()) return;
      const eventAttributes: Attributes = { ...attributes };
      if (rejection.token !== undefined) eventAttributes[AttributeName.FENCE_TOKEN] = rejection.token.toString();
      if (rejection.highestToken !== undefined) {
        eventAttributes[AttributeName.FENCE_HIGHEST_TOKEN] = rejection.highestToken.toString();
      }
      span.addEvent(SpanEventName.FENCE_REJECTED, eventAttributes);
    } catch (error) {
      // The guard calls listeners synchronously inside `check()`: never let telemetry break a write path.
      diag.error('@fencelock/opentelemetry: recording a fence rejection failed', error);
    }
  };
}

/**
 * Records every write `guard` refuses (see {@link createFenceRejectionRecorder}) until `close()`.
 *
 * @example
 * const guard = new FencingGuard();
 * using instrumentation = instrumentFencingGuard(guard, { meterProvider });
 */
export function instrumentFencingGuard(
  guard: Pick<FencingGuard, 'onReject'>,
  options: FenceInstrumentationOptions = {},
): Instrumentation {
  const unsubscribe = guard.onReject(createFenceRejectionRecorder(options));
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    unsubscribe();
  };
  return { close, [Symbol.dispose]: close };
}
