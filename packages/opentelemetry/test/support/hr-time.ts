import type { HrTime } from '@opentelemetry/api';

/** An OpenTelemetry `[seconds, nanoseconds]` duration in ms. */
export function hrTimeToMilliseconds(time: HrTime): number {
  return time[0] * 1_000 + time[1] / 1e6;
}
