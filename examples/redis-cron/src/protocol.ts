/** The messages between the scheduler (the parent process) and its worker processes, over Node's IPC channel. */

/** How a worker takes the tick's lock. */
export type LockMode = 'try' | 'wait';

/** What the scheduler tells a worker at start-up (as its one command-line argument, JSON). */
export interface WorkerConfig {
  /** The worker's name in the timeline, e.g. `worker-2`. */
  readonly name: string;
  /** `redis://` URL of the server holding the locks and the report store. */
  readonly redisUrl: string;
  /** Prefix of every Redis key this run uses, so runs never see each other's keys. */
  readonly namespace: string;
  /** The lock's TTL, in ms; automatic extension keeps it held while the job runs longer. */
  readonly ttlMs: number;
  /** How long the nightly report takes to build, in ms. */
  readonly jobMs: number;
}

/** Scheduler → worker. */
export type SchedulerMessage =
  | { readonly type: 'tick'; readonly date: string; readonly mode: LockMode }
  | { readonly type: 'stop' };

/**
 * What one worker did with one tick.
 * - `ran`: it held the lock and built the report.
 * - `busy`: `tryAcquire` found another worker holding the lock; it skipped.
 * - `done-already`: the report was already marked done (seen before or after taking the lock); it skipped.
 * - `lost`: it lost the lock while the job ran (`lock.signal` aborted); it abandoned the job unpublished.
 */
export type TickOutcome = 'ran' | 'busy' | 'done-already' | 'lost';

/** One worker's report on one tick. */
export interface TickReport {
  readonly worker: string;
  readonly date: string;
  readonly mode: LockMode;
  readonly outcome: TickOutcome;
  /** The lock's fencing token, when this worker held the lock (as a decimal string). */
  readonly fencingToken?: string;
  /** How often the lock was extended automatically while the job ran. */
  readonly extensions?: number;
  /** How long `acquire`/`tryAcquire` took, in ms. */
  readonly waitedMs?: number;
  /** Who had marked the report done, for `done-already`. */
  readonly doneBy?: string;
  /** For `done-already`: whether the worker had taken the lock before it found the report done. */
  readonly tookLock?: boolean;
}

/** Worker → scheduler. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'report'; readonly report: TickReport }
  | { readonly type: 'failed'; readonly date: string; readonly error: string };
