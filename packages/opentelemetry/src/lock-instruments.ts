import type { Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api';
import { ACQUIRE_DURATION_BUCKETS_S, HOLD_DURATION_BUCKETS_S, MetricName } from './names.js';

/** @internal The metric instruments of a lock provider. */
export interface LockInstruments {
  readonly acquireDuration: Histogram;
  readonly contentions: Counter;
  readonly timeouts: Counter;
  readonly holdDuration: Histogram;
  readonly losses: Counter;
  readonly releaseFailures: Counter;
  readonly lateRenewals: Counter;
  readonly semaphorePermits: UpDownCounter;
  readonly semaphoreWaiters: UpDownCounter;
  readonly leadershipCount: UpDownCounter;
  readonly leadershipChanges: Counter;
  readonly campaignWaiters: UpDownCounter;
  readonly backendWarnings: Counter;
  readonly extensions: Counter;
  readonly lockCount: UpDownCounter;
}

/**
 * @internal Creates the instruments on `meter`. Creating them again on the same meter (a second
 * instrumented provider) yields the same metric streams in the SDK, told apart by attributes.
 */
export function createLockInstruments(meter: Meter): LockInstruments {
  return {
    acquireDuration: meter.createHistogram(MetricName.ACQUIRE_DURATION, {
      description: 'Time from an acquire call to its grant, timeout or abort.',
      unit: 's',
      // `advice` is read by SDKs from API 1.7 on; older ones ignore it and use their own buckets.
      advice: { explicitBucketBoundaries: [...ACQUIRE_DURATION_BUCKETS_S] },
    }),
    contentions: meter.createCounter(MetricName.CONTENTIONS, {
      description: 'Acquire or tryAcquire calls that found the key held by another owner.',
      unit: '{contention}',
    }),
    timeouts: meter.createCounter(MetricName.TIMEOUTS, {
      description: 'Acquire calls whose wait bound ran out before the lock was granted.',
      unit: '{timeout}',
    }),
    holdDuration: meter.createHistogram(MetricName.HOLD_DURATION, {
      description: 'Time from the grant of a lock to its release or loss.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...HOLD_DURATION_BUCKETS_S] },
    }),
    losses: meter.createCounter(MetricName.LOSSES, {
      description: 'Held locks the provider found gone (expired, taken over, session lost, held too long, provider closed).',
      unit: '{loss}',
    }),
    releaseFailures: meter.createCounter(MetricName.RELEASE_FAILURES, {
      description: 'Releases that could not reach the backend at first and are retried in the background.',
      unit: '{failure}',
    }),
    lateRenewals: meter.createCounter(MetricName.LATE_RENEWALS, {
      description: 'Automatic renewals that started late or failed while the lock was still valid.',
      unit: '{renewal}',
    }),
    backendWarnings: meter.createCounter(MetricName.BACKEND_WARNINGS, {
      description: 'Settings of the backend that weaken the guarantees, found by the configuration check.',
      unit: '{warning}',
    }),
    extensions: meter.createCounter(MetricName.EXTENSIONS, {
      description: 'Successful extensions of held locks, manual or automatic.',
      unit: '{extension}',
    }),
    lockCount: meter.createUpDownCounter(MetricName.LOCK_COUNT, {
      description: 'Locks this process holds now, by state.',
      unit: '{lock}',
    }),
    semaphorePermits: meter.createUpDownCounter(MetricName.SEMAPHORE_PERMIT_COUNT, {
      description: 'Counting-semaphore permits this process holds now, by state and limit.',
      unit: '{permit}',
    }),
    semaphoreWaiters: meter.createUpDownCounter(MetricName.SEMAPHORE_WAITER_COUNT, {
      description: 'Semaphore acquire calls of this process that found no permit free and still wait.',
      unit: '{acquire}',
    }),
    leadershipCount: meter.createUpDownCounter(MetricName.LEADERSHIP_COUNT, {
      description: 'Leaderships this process holds now, by state.',
      unit: '{leadership}',
    }),
    leadershipChanges: meter.createCounter(MetricName.LEADERSHIP_CHANGES, {
      description: 'Leaderships of this process won, resigned or lost.',
      unit: '{change}',
    }),
    campaignWaiters: meter.createUpDownCounter(MetricName.CAMPAIGN_WAITER_COUNT, {
      description: 'Campaigns of this process that found another campaigner leading and still wait.',
      unit: '{campaign}',
    }),
  };
}
