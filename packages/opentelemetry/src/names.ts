/**
 * The names this package emits: metric names, attribute keys, span names and their values. They are
 * the public contract dashboards and alerts are built on, so they change only in a major version.
 *
 * Naming follows the OpenTelemetry semantic-convention guidelines: a `fencelock.` namespace, durations
 * as histograms in seconds (`s`), counts of discrete things as counters with a singular `{annotation}`
 * unit and a plural name, the number of things currently in a state as an UpDownCounter named `count`
 * with a `state` attribute (as `db.client.connection.count` does).
 */

/** The instrumentation scope (meter and tracer name). */
export const INSTRUMENTATION_SCOPE = '@fencelock/opentelemetry';

/** Metric names. */
export const MetricName = {
  /** Histogram, `s`: from an acquire call to its grant, timeout or abort. */
  ACQUIRE_DURATION: 'fencelock.lock.acquire.duration',
  /** Counter, `{contention}`: acquire or tryAcquire calls that found the key held by another owner. */
  CONTENTIONS: 'fencelock.lock.contentions',
  /** Counter, `{timeout}`: acquire calls whose `waitMs` ran out. */
  TIMEOUTS: 'fencelock.lock.timeouts',
  /** Histogram, `s`: from the grant to the release or the loss. */
  HOLD_DURATION: 'fencelock.lock.hold.duration',
  /** Counter, `{loss}`: held locks the provider found gone. */
  LOSSES: 'fencelock.lock.losses',
  /**
   * Counter, `{failure}`: releases that could not reach the backend at first; they are retried in
   * the background (a `released` hold with outcome `released` follows when one is confirmed).
   */
  RELEASE_FAILURES: 'fencelock.lock.release_failures',
  /**
   * Counter, `{renewal}`: automatic renewals that started late or failed while the lock was still
   * valid (a blocked event loop, a slow backend): the warning that comes before losses.
   */
  LATE_RENEWALS: 'fencelock.lock.late_renewals',
  /** Counter, `{extension}`: successful extensions, manual or automatic. */
  EXTENSIONS: 'fencelock.lock.extensions',
  /** UpDownCounter, `{lock}`: locks this process holds now, by state (`held`, `uncertain`). */
  LOCK_COUNT: 'fencelock.lock.count',
  /**
   * UpDownCounter, `{permit}`: counting-semaphore permits this process holds now, by state (`held`,
   * `uncertain`) and the semaphore's limit (a handle that took 2 permits counts 2).
   */
  SEMAPHORE_PERMIT_COUNT: 'fencelock.semaphore.permit.count',
  /**
   * UpDownCounter, `{acquire}`: semaphore acquire calls of this process that found no permit free
   * and still wait (from their `contended` event to their end).
   */
  SEMAPHORE_WAITER_COUNT: 'fencelock.semaphore.waiter.count',
  /**
   * UpDownCounter, `{leadership}`: leaderships this process holds now (elections it won and still
   * leads), by state (`held`, `uncertain`).
   */
  LEADERSHIP_COUNT: 'fencelock.election.leadership.count',
  /**
   * Counter, `{change}`: changes of this process's leaderships, by `fencelock.election.outcome`
   * (`elected`, `resigned`, `not_held`, `lost`).
   */
  LEADERSHIP_CHANGES: 'fencelock.election.leadership.changes',
  /**
   * UpDownCounter, `{campaign}`: campaigns of this process that found another campaigner leading and
   * still wait (from their `contended` event to their end).
   */
  CAMPAIGN_WAITER_COUNT: 'fencelock.election.waiter.count',
  /**
   * Counter, `{warning}`: settings of the backend that weaken the guarantees, found by the provider's
   * configuration check (a Redis eviction policy): once per provider and warning code.
   */
  BACKEND_WARNINGS: 'fencelock.backend.warnings',
  /** Counter, `{rejection}`: writes a fenced resource refused for a stale fencing token. */
  FENCE_REJECTIONS: 'fencelock.fence.rejections',
} as const;

/** Attribute keys. */
export const AttributeName = {
  /** The provider's `name` (`memory`, `redis`, `redlock`, `zookeeper`, `etcd`, …). */
  BACKEND: 'fencelock.backend',
  /** `exclusive` or `shared`; `semaphore` for a counting semaphore's permits; `leader` for a leadership. */
  MODE: 'fencelock.lock.mode',
  /** Semaphores: the limit the holders agreed on (on permit counts, acquire spans of grants and hold spans). */
  SEMAPHORE_LIMIT: 'fencelock.semaphore.limit',
  /** Semaphore spans only: how many permits the grant holds. */
  SEMAPHORE_PERMITS: 'fencelock.semaphore.permits',
  /** How an acquisition or a hold ended: see {@link AcquireOutcome} and {@link HoldOutcome}. */
  OUTCOME: 'fencelock.lock.outcome',
  /** Whether the key was held by another owner when the acquire call started (granted acquisitions only). */
  CONTENDED: 'fencelock.lock.contended',
  /** The lock key (or what `recordKeys` maps it to); only when `recordKeys` is set. */
  KEY: 'fencelock.lock.key',
  /** Why a held lock was lost: `expired`, `taken-over`, `session-lost`, `max-hold`, `provider-closed`. */
  LOSS_REASON: 'fencelock.lock.loss_reason',
  /** `held` or `uncertain` (the connection behind the lock is down; it may still be valid). */
  STATE: 'fencelock.lock.state',
  /** Whether an extension was made automatically (`autoExtend`, a session heartbeat) or by `extend()`. */
  EXTENSION_AUTOMATIC: 'fencelock.lock.extension.automatic',
  /** Spans only: the acquisition's owner id (a UUID, as `inspect` shows it). */
  OWNER_ID: 'fencelock.lock.owner_id',
  /** Spans only: the fencing token, as a decimal string (a bigint does not fit an attribute number). */
  FENCING_TOKEN: 'fencelock.lock.fencing_token',
  /** Spans only: how long the acquire call waited, in ms (the acquire span's duration). */
  WAITED_MS: 'fencelock.lock.waited_ms',
  /** Spans only: how long the lock was held, in ms. */
  HELD_MS: 'fencelock.lock.held_ms',
  /** Fence rejection span events: the token the writer presented, as a decimal string. */
  FENCE_TOKEN: 'fencelock.fence.token',
  /** Fence rejection span events: the highest token the resource had accepted, as a decimal string. */
  FENCE_HIGHEST_TOKEN: 'fencelock.fence.highest_token',
  /** Backend warnings: the warning's code, e.g. `redis-eviction-policy`. */
  WARNING_CODE: 'fencelock.backend.warning_code',
  /**
   * Elections, spans only: the term of a leadership (its fencing token), as a decimal string. Never
   * on metrics: every election adds a new term, so each would be a new series.
   */
  ELECTION_TERM: 'fencelock.election.term',
  /** Elections: how a leadership changed, see {@link ElectionOutcome}. */
  ELECTION_OUTCOME: 'fencelock.election.outcome',
  /** The semantic-convention error attribute: the `LockError` code of a failed acquisition or a loss. */
  ERROR_TYPE: 'error.type',
} as const;

/** Values of `fencelock.lock.outcome` on acquisitions. */
export const AcquireOutcome = {
  /** The lock was granted. */
  ACQUIRED: 'acquired',
  /** `waitMs` ran out (`LOCK_TIMEOUT`). */
  TIMEOUT: 'timeout',
  /** The caller's signal aborted the wait (`LOCK_ABORTED`). */
  ABORTED: 'aborted',
  /** A `tryAcquire` found the key held (not an error). */
  DECLINED: 'declined',
  /** The call failed with another error (backend unreachable, no quorum, provider closed); `error.type` says which. */
  FAILED: 'failed',
} as const;
/** One of the {@link AcquireOutcome} values. */
export type AcquireOutcome = (typeof AcquireOutcome)[keyof typeof AcquireOutcome];

/** Values of `fencelock.lock.outcome` on holds. */
export const HoldOutcome = {
  /** `release()` freed a lock this owner still held. */
  RELEASED: 'released',
  /** `release()` found the lock already gone on the backend (expired or taken over unnoticed). */
  NOT_HELD: 'not_held',
  /** The provider found the lock gone while it was held. */
  LOST: 'lost',
  /** Hold spans only: the instrumentation was closed while the lock was still held. */
  UNTRACKED: 'untracked',
} as const;
/** One of the {@link HoldOutcome} values. */
export type HoldOutcome = (typeof HoldOutcome)[keyof typeof HoldOutcome];

/** Values of `fencelock.election.outcome` on `fencelock.election.leadership.changes`. */
export const ElectionOutcome = {
  /** A campaign of this process was elected. */
  ELECTED: 'elected',
  /** `resign()` (or `release()`) gave up a leadership this process still held. */
  RESIGNED: 'resigned',
  /** `resign()` found the leadership already gone on the backend (expired or taken over unnoticed). */
  NOT_HELD: 'not_held',
  /** The provider found the leadership gone while this process led (`fencelock.lock.loss_reason` says why). */
  LOST: 'lost',
} as const;
/** One of the {@link ElectionOutcome} values. */
export type ElectionOutcome = (typeof ElectionOutcome)[keyof typeof ElectionOutcome];

/** Span names. Low-cardinality by design: the key is an attribute, never part of the name. */
export const SpanName = {
  /** One per acquisition attempt that ends in a grant, a timeout or an abort. */
  ACQUIRE: 'fencelock.acquire',
  /** Opt-in: from the grant to the release or loss. */
  HOLD: 'fencelock.hold',
} as const;

/** Span event names. */
export const SpanEventName = {
  /** On the span active when a fenced resource refused a stale write. */
  FENCE_REJECTED: 'fencelock.fence.rejected',
  /** On a hold span: the connection behind the lock went down. */
  UNCERTAIN: 'fencelock.lock.uncertain',
  /** On a hold span: the connection came back and the lock is still held. */
  RECOVERED: 'fencelock.lock.recovered',
} as const;

/**
 * Bucket boundaries advised for `fencelock.lock.acquire.duration`, in seconds: from an uncontended
 * Redis grant (~0.2 ms) through consensus-backed grants (a few ms) to long contended waits (the
 * default `waitMs` is 30 s). The SDK's default boundaries (0, 5, 10, 25 … 10 000) are meant for
 * milliseconds and would put every lock wait in the first bucket.
 */
export const ACQUIRE_DURATION_BUCKETS_S: readonly number[] = Object.freeze([
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]);

/**
 * Bucket boundaries advised for `fencelock.lock.hold.duration`, in seconds: from short critical
 * sections (ms) to singleton workers that hold a lock for an hour.
 */
export const HOLD_DURATION_BUCKETS_S: readonly number[] = Object.freeze([
  0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600,
]);
