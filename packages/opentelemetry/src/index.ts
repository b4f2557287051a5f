export { instrumentLockProvider } from './instrument-lock-provider.js';
export { createFenceRejectionRecorder, instrumentFencingGuard } from './fence-rejections.js';
export type { FenceRejectionInput } from './fence-rejections.js';
export type { Instrumentation } from './instrumentation.js';
export type { FenceInstrumentationOptions, KeyRecording, LockInstrumentationOptions } from './options.js';
export {
  ACQUIRE_DURATION_BUCKETS_S,
  AcquireOutcome,
  AttributeName,
  ElectionOutcome,
  HOLD_DURATION_BUCKETS_S,
  HoldOutcome,
  INSTRUMENTATION_SCOPE,
  MetricName,
  SpanEventName,
  SpanName,
} from './names.js';
