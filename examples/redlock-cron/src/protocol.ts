/** The messages between the scheduler (the parent process) and its worker processes, over Node's IPC channel. */

/** How a worker takes the tick's lock. */
export type LockMode = 'try' | 'wait';

/** What the scheduler tells a worker at start-up (as its one command-line argument, JSON). */
export interface WorkerConfig {
  /** The worker's name in the timeline, e.g. `worker-2`. */
  readonly name: string;
  /** `redis://` URLs of the independent Redis masters (an odd number, at least 3). */
  readonly masters: readonly string[];
  /** Prefix of every lock key this run uses, so runs never see each other's locks. */
  readonly namespace: string;
  /** Directory of the published reports (one file per date: the idempotency record). */
  readonly reportsDir: string;
  /** The lock's TTL, in ms; automatic extension keeps it held while the job runs longer. */
  readonly ttlMs: number;
  /** How long the nightly report takes to build, in ms. */
  readonly jobMs: number;
}

/** Scheduler → worker. */
export type SchedulerMessage =
  | {
      readonly type: 'tick';
      readonly date: string;
      readonly mode: LockMode;
      /**
       * The worker that builds the report stops its own process (SIGSTOP) between its last lock
       * check and its write, as a GC pause or a frozen VM would, until the scheduler resumes it.
       */
      readonly pauseBeforeWrite?: boolean;
    }
  | { readonly type: 'stop' };

/**
 * What one worker did with one tick.
 * - `ran`: it held the lock, built the report and wrote it.
 * - `busy`: `tryAcquire` found another worker holding the lock; it skipped.
 * - `done-already`: the report was already there (seen before or after taking the lock); it skipped.
 * - `duplicate-refused`: it built the report, but when it wrote it the idempotency record showed
 *   that another worker had written it meanwhile, so its copy was dropped.
 * - `lost`: it lost the lock while the job ran (`lock.signal` aborted); it abandoned the job unwritten.
 */
export type TickOutcome = 'ran' | 'busy' | 'done-already' | 'duplicate-refused' | 'lost';

/** One worker's report on one tick. */
export interface TickReport {
  readonly worker: string;
  readonly date: string;
  readonly mode: LockMode;
  readonly outcome: TickOutcome;
  /** How often the lock was extended automatically while the job ran. */
  readonly extensions?: number;
  /** How long `acquire`/`tryAcquire` took, in ms. */
  readonly waitedMs?: number;
  /** Who wrote the report, for `done-already` and `duplicate-refused`. */
  readonly writtenBy?: string;
  /** For `done-already`: whether the worker had taken the lock before it found the report. */
  readonly tookLock?: boolean;
  /** Whether the lock was still held when the worker wrote (or tried to write). */
  readonly heldAtWrite?: boolean;
}

/** Worker → scheduler. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'pausing'; readonly date: string }
  | { readonly type: 'report'; readonly report: TickReport }
  | { readonly type: 'failed'; readonly date: string; readonly error: string };
