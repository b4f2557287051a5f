import { diag, metrics, trace, type Attributes, type Span, type UpDownCounter } from '@opentelemetry/api';
import { LockErrorCode, type LockEventBase, type LockEventListener, type LockEventMap, type LockProvider } from '@fencelock/core';
import type { Instrumentation } from './instrumentation.js';
import { lockAttributeCache, type LockAttributeSets } from './lock-attributes.js';
import { createLockInstruments } from './lock-instruments.js';
import { endHoldSpan, recordAcquireSpan, startHoldSpan } from './lock-spans.js';
import { AcquireOutcome, AttributeName, ElectionOutcome, HoldOutcome, INSTRUMENTATION_SCOPE, SpanEventName } from './names.js';
import { keyAttributeOf, type LockInstrumentationOptions } from './options.js';

/** What the instrumentation remembers about a lock it saw granted, until its release or loss. */
interface TrackedHold {
  /** The attributes of the grant, so the decrement hits the same series as the increment. */
  readonly attributes: LockAttributeSets;
  state: 'held' | 'uncertain';
  readonly span: Span | undefined;
  /** For a semaphore's permits: the limit and how many this hold counts in `fencelock.semaphore.permit.count`. */
  readonly semaphore: { readonly limit: number; readonly permits: number } | undefined;
  /** A leadership (`mode: 'leader'`): also counted in `fencelock.election.leadership.count`. */
  readonly leader: boolean;
}

/**
 * The calls of one key that wait (semaphore calls for permits, campaigns for leadership), and the
 * instrument and series they are counted in.
 */
interface Waiters {
  readonly instrument: UpDownCounter;
  readonly attributes: Attributes;
  count: number;
}

/**
 * Turns a provider's events into OpenTelemetry metrics and spans (see the package README for the
 * table of names, units and attributes). Uses only `@opentelemetry/api`: without a registered SDK,
 * nothing is recorded.
 *
 * Call it once per provider, after the SDK is registered when relying on the global providers;
 * `close()` (or `using`) removes the listeners. Locks still held at `close()` are taken out of
 * `fencelock.lock.count` (and their permits out of `fencelock.semaphore.permit.count`, leaderships
 * out of `fencelock.election.leadership.count`; semaphore calls and campaigns still waiting, out of
 * `fencelock.semaphore.waiter.count` and `fencelock.election.waiter.count`), since their end will no
 * longer be seen.
 *
 * @example
 * const instrumentation = instrumentLockProvider(locks, { meterProvider, tracerProvider });
 * // …
 * instrumentation.close();
 */
export function instrumentLockProvider(
  provider: Pick<LockProvider, 'on'>,
  options: LockInstrumentationOptions = {},
): Instrumentation {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(INSTRUMENTATION_SCOPE);
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(INSTRUMENTATION_SCOPE);
  const instruments = createLockInstruments(meter);
  const attributesOf = lockAttributeCache(options.attributes ?? {}, keyAttributeOf(options.recordKeys));
  const acquireSpans = options.acquireSpans ?? true;
  const holdSpans = options.holdSpans ?? false;
  // Per owner id (unique per acquisition): what was granted while we listened.
  const holds = new Map<string, TrackedHold>();
  // Owner ids that ended before their `acquired` event: core reports a loss found during the grant
  // just before `acquired`, in the same synchronous call, so they are forgotten on the next microtask.
  const endedBeforeGrant = new Set<string>();
  // Per provider, mode and key: semaphore calls and campaigns that reported contention and have not ended.
  // Entries leave at zero, so the map is bounded by the calls waiting now, whatever the keys.
  const waiters = new Map<string, Waiters>();

  // What a hold counts beside `fencelock.lock.count`: a semaphore's permits, a leadership.
  const countShares = (hold: TrackedHold, sign: 1 | -1): void => {
    if (hold.semaphore !== undefined) {
      instruments.semaphorePermits.add(sign * hold.semaphore.permits, hold.attributes.permits(hold.state, hold.semaphore.limit));
    }
    if (hold.leader) instruments.leadershipCount.add(sign, hold.attributes.state(hold.state));
  };

  // Locks have no waiter count: only semaphore calls and campaigns are counted while they wait.
  const waiterInstrument = (mode: LockEventBase['mode']): UpDownCounter | undefined =>
    mode === 'semaphore' ? instruments.semaphoreWaiters : mode === 'leader' ? instruments.campaignWaiters : undefined;

  // A semaphore call that found no permit free, or a campaign that found a leader, waits from its
  // `contended` event to its end.
  const waitStarted = (event: LockEventBase, attributes: LockAttributeSets): void => {
    const instrument = waiterInstrument(event.mode);
    if (instrument === undefined) return;
    const id = `${event.provider}\u0000${event.mode}\u0000${event.key}`;
    const entry = waiters.get(id) ?? { instrument, attributes: attributes.base, count: 0 };
    entry.count += 1;
    waiters.set(id, entry);
    instrument.add(1, entry.attributes);
  };
  // The end of a call that may have waited. Only a grant says whether its call was contended; a
  // timeout, an abort, a decline or a failure of that key ends one of its waiters (never below zero),
  // so the count is back at zero whenever no call of the key is left.
  const waitEnded = (event: LockEventBase): void => {
    if (waiterInstrument(event.mode) === undefined) return;
    const id = `${event.provider}\u0000${event.mode}\u0000${event.key}`;
    const entry = waiters.get(id);
    if (entry === undefined) return;
    entry.count -= 1;
    if (entry.count === 0) waiters.delete(id);
    entry.instrument.add(-1, entry.attributes);
  };

  const endHold = (ownerId: string): TrackedHold | undefined => {
    const hold = holds.get(ownerId);
    if (hold === undefined) {
      endedBeforeGrant.add(ownerId);
      queueMicrotask(() => endedBeforeGrant.delete(ownerId));
      return undefined;
    }
    holds.delete(ownerId);
    instruments.lockCount.add(-1, hold.attributes.state(hold.state));
    countShares(hold, -1);
    return hold;
  };

  const setState = (ownerId: string, state: TrackedHold['state']): TrackedHold | undefined => {
    const hold = holds.get(ownerId);
    if (hold === undefined || hold.state === state) return undefined;
    instruments.lockCount.add(-1, hold.attributes.state(hold.state));
    countShares(hold, -1);
    instruments.lockCount.add(1, hold.attributes.state(state));
    hold.state = state;
    countShares(hold, 1);
    return hold;
  };

  const handlers: { [E in keyof LockEventMap]: LockEventListener<E> } = {
    contended(event) {
      const attributes = attributesOf(event);
      instruments.contentions.add(1, attributes.base);
      waitStarted(event, attributes);
    },
    acquired(event) {
      if (event.contended) waitEnded(event);
      const attributes = attributesOf(event);
      const sample = attributes.acquired(event.contended);
      instruments.acquireDuration.record(event.waitedMs / 1_000, sample);
      const identity: Attributes = { [AttributeName.OWNER_ID]: event.ownerId };
      if (event.fencingToken !== undefined) identity[AttributeName.FENCING_TOKEN] = event.fencingToken.toString();
      const semaphore = event.mode === 'semaphore' && event.limit !== undefined && event.permits !== undefined ? { limit: event.limit, permits: event.permits } : undefined;
      if (semaphore !== undefined) {
        identity[AttributeName.SEMAPHORE_LIMIT] = semaphore.limit;
        identity[AttributeName.SEMAPHORE_PERMITS] = semaphore.permits;
      }
      const leader = event.mode === 'leader';
      if (leader) {
        // The term is the leadership's fencing token. Spans only: each election has a new one.
        if (event.fencingToken !== undefined) identity[AttributeName.ELECTION_TERM] = event.fencingToken.toString();
        // Won, even when lost again during the grant (its loss is counted too).
        instruments.leadershipChanges.add(1, attributes.electionChange(ElectionOutcome.ELECTED));
      }
      if (acquireSpans) recordAcquireSpan(tracer, { ...sample, ...identity }, event.waitedMs);
      if (endedBeforeGrant.delete(event.ownerId)) return;
      instruments.lockCount.add(1, attributes.state('held'));
      const span = holdSpans ? startHoldSpan(tracer, { ...attributes.base, ...identity }) : undefined;
      const hold: TrackedHold = { attributes, state: 'held', span, semaphore, leader };
      countShares(hold, 1);
      holds.set(event.ownerId, hold);
    },
    timeout(event) {
      waitEnded(event);
      const attributes = attributesOf(event);
      instruments.acquireDuration.record(event.waitedMs / 1_000, attributes.timeout);
      instruments.timeouts.add(1, attributes.base);
      if (acquireSpans) {
        recordAcquireSpan(tracer, attributes.timeout, event.waitedMs, {
          code: LockErrorCode.TIMEOUT,
          message: 'the wait bound ran out before the lock was granted',
        });
      }
    },
    aborted(event) {
      waitEnded(event);
      const attributes = attributesOf(event);
      instruments.acquireDuration.record(event.waitedMs / 1_000, attributes.aborted);
      if (acquireSpans) {
        recordAcquireSpan(tracer, attributes.aborted, event.waitedMs, {
          code: LockErrorCode.ABORTED,
          message: 'the acquire call was aborted through its signal',
        });
      }
    },
    declined(event) {
      waitEnded(event);
      const attributes = attributesOf(event);
      instruments.acquireDuration.record(event.waitedMs / 1_000, attributes.declined);
      if (acquireSpans) recordAcquireSpan(tracer, attributes.declined, event.waitedMs);
    },
    failed(event) {
      waitEnded(event);
      const sample = attributesOf(event).failed(event.error.code);
      instruments.acquireDuration.record(event.waitedMs / 1_000, sample);
      if (acquireSpans) {
        // Not the error's message: it names the key, which only `recordKeys` may put into telemetry.
        recordAcquireSpan(tracer, sample, event.waitedMs, { code: event.error.code, message: 'the acquire call failed' });
      }
    },
    released(event) {
      const attributes = attributesOf(event);
      instruments.holdDuration.record(event.heldMs / 1_000, attributes.released(event.wasHeld));
      if (event.mode === 'leader') {
        instruments.leadershipChanges.add(1, attributes.electionChange(event.wasHeld ? ElectionOutcome.RESIGNED : ElectionOutcome.NOT_HELD));
      }
      const span = endHold(event.ownerId)?.span;
      if (span === undefined) return;
      const outcome = event.wasHeld ? HoldOutcome.RELEASED : HoldOutcome.NOT_HELD;
      // The lock was gone before the release: the work under it may have run unprotected.
      const failure = event.wasHeld ? undefined : { code: LockErrorCode.NOT_HELD, message: 'release found the lock already gone' };
      endHoldSpan(span, { [AttributeName.OUTCOME]: outcome, [AttributeName.HELD_MS]: event.heldMs }, failure);
    },
    'renewal-late'(event) {
      instruments.lateRenewals.add(1, attributesOf(event).base);
    },
    'release-failed'(event) {
      if (event.willRetry) instruments.releaseFailures.add(1, attributesOf(event).base);
    },
    lost(event) {
      const reason = event.error.reason;
      const sets = attributesOf(event);
      const attributes = sets.lost(reason);
      instruments.losses.add(1, attributes.loss);
      if (event.mode === 'leader') instruments.leadershipChanges.add(1, sets.electionChange(ElectionOutcome.LOST, reason));
      instruments.holdDuration.record(event.heldMs / 1_000, attributes.hold);
      const span = endHold(event.ownerId)?.span;
      if (span === undefined) return;
      const endAttributes: Attributes = { [AttributeName.OUTCOME]: HoldOutcome.LOST, [AttributeName.HELD_MS]: event.heldMs };
      if (reason !== undefined) endAttributes[AttributeName.LOSS_REASON] = reason;
      // Not the error's message: it names the key, which only `recordKeys` may put into telemetry.
      endHoldSpan(span, endAttributes, { code: event.error.code, message: `the lock was lost (${reason ?? 'no reason given'})` });
    },
    extended(event) {
      instruments.extensions.add(1, attributesOf(event).extended(event.automatic));
    },
    uncertain(event) {
      setState(event.ownerId, 'uncertain')?.span?.addEvent(SpanEventName.UNCERTAIN);
    },
    recovered(event) {
      setState(event.ownerId, 'held')?.span?.addEvent(SpanEventName.RECOVERED);
    },
    'backend-warning'(event) {
      instruments.backendWarnings.add(1, { [AttributeName.BACKEND]: event.provider, [AttributeName.WARNING_CODE]: event.code });
      // Also where operators look first: the message says what is unsafe and what to change.
      diag.warn(`@fencelock/opentelemetry: ${event.provider}: ${event.message}`);
    },
  };

  const unsubscribes: (() => void)[] = [];
  const listen = <E extends keyof LockEventMap>(event: E): void => {
    unsubscribes.push(subscribe(provider, event, handlers[event]));
  };
  for (const event of Object.keys(handlers) as (keyof LockEventMap)[]) listen(event);

  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const unsubscribe of unsubscribes) unsubscribe();
    for (const hold of holds.values()) {
      instruments.lockCount.add(-1, hold.attributes.state(hold.state));
      countShares(hold, -1);
      if (hold.span !== undefined) endHoldSpan(hold.span, { [AttributeName.OUTCOME]: HoldOutcome.UNTRACKED });
    }
    holds.clear();
    endedBeforeGrant.clear();
    // Their ends will no longer be seen either.
    for (const entry of waiters.values()) entry.instrument.add(-entry.count, entry.attributes);
    waiters.clear();
  };
  return { close, [Symbol.dispose]: close };
}

// A throwing listener would surface as an uncaught error on a later microtask (core's emitter
// rethrows there): telemetry must never take a process down, so failures go to OTel's diag logger.
function subscribe<E extends keyof LockEventMap>(
  provider: Pick<LockProvider, 'on'>,
  event: E,
  handler: LockEventListener<E>,
): () => void {
  return provider.on(event, (payload) => {
    try {
      handler(payload);
    } catch (error) {
      diag.error(`@fencelock/opentelemetry: recording the "${event}" event failed`, error);
    }
  });
}
