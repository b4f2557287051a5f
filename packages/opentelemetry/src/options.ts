import type { Attributes, MeterProvider, TracerProvider } from '@opentelemetry/api';

/**
 * Whether lock keys become attributes. `false` (the default) records none; `true` records each key
 * as it is; a function maps a key to the value recorded (return `undefined` to record none), e.g.
 * `(key) => key.split(':')[0]` turns `invoice:42` into `invoice`.
 *
 * Off by default because keys are usually unbounded (`invoice:<id>`, `user:<email>`): every distinct
 * attribute value is a separate time series in the metrics backend, so per-key attributes can grow
 * memory in the SDK and cost in the backend without limit, and keys may carry personal data into
 * telemetry. Map them to a small set of groups if you need a breakdown.
 */
export type KeyRecording = boolean | ((key: string) => string | undefined);

/** Options of `instrumentLockProvider`. */
export interface LockInstrumentationOptions {
  /**
   * Where metrics go. Resolved once, when `instrumentLockProvider` is called: register the SDK first.
   * @default the global meter provider (`metrics.getMeterProvider()`)
   */
  readonly meterProvider?: MeterProvider;
  /** Where spans go. @default the global tracer provider (`trace.getTracerProvider()`) */
  readonly tracerProvider?: TracerProvider;
  /** Whether (and how) lock keys become attributes of metrics and spans. See {@link KeyRecording}. @default false */
  readonly recordKeys?: KeyRecording;
  /** Emit a `fencelock.acquire` span per acquisition attempt that ends in a grant, timeout or abort. @default true */
  readonly acquireSpans?: boolean;
  /**
   * Emit a `fencelock.hold` span from each grant to its release or loss. Off by default: a singleton
   * worker may hold a lock for hours, and a span that long is hard to read in trace views and lost
   * entirely if the process dies before it ends.
   * @default false
   */
  readonly holdSpans?: boolean;
  /**
   * Constant attributes added to every measurement and span, e.g. `{ 'fencelock.provider.instance': 'orders' }`
   * to tell apart two providers on the same backend. Keep them low-cardinality.
   * @default none
   */
  readonly attributes?: Attributes;
}

/** Options of `instrumentFencingGuard` and `createFenceRejectionRecorder`. */
export interface FenceInstrumentationOptions {
  /** Where metrics go. @default the global meter provider (`metrics.getMeterProvider()`) */
  readonly meterProvider?: MeterProvider;
  /** Whether (and how) resource keys become attributes. See {@link KeyRecording}. @default false */
  readonly recordKeys?: KeyRecording;
  /**
   * Constant attributes added to every measurement, e.g. `{ 'fencelock.fence.resource': 'invoices-table' }`.
   * @default none
   */
  readonly attributes?: Attributes;
  /** Add a `fencelock.fence.rejected` event to the span active when a write is refused. @default true */
  readonly spanEvents?: boolean;
}

/** @internal Turns a {@link KeyRecording} into a function giving the attribute value, or undefined. */
export function keyAttributeOf(recordKeys: KeyRecording | undefined): (key: string) => string | undefined {
  if (typeof recordKeys === 'function') return recordKeys;
  return recordKeys === true ? (key) => key : () => undefined;
}
