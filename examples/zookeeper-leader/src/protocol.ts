/** The messages between the supervisor (the parent process) and its worker processes, over Node's IPC channel. */

/** What the supervisor tells a worker at start-up (as its one command-line argument, JSON). */
export interface WorkerConfig {
  /** The worker's name in the timeline, e.g. `worker-2`. */
  readonly name: string;
  /** ZooKeeper connection string, `host:port[,…]`. */
  readonly connectionString: string;
  /** The lock every worker competes for. */
  readonly leaderKey: string;
  /** ZooKeeper session timeout, in ms: how long a dead leader keeps the lock. */
  readonly sessionTimeoutMs: number;
  /** Pause between two rounds of the leader's periodic work, in ms. */
  readonly workIntervalMs: number;
  /** How long one round's job runs before its result is written, in ms. */
  readonly jobMs: number;
}

/** Supervisor → worker. */
export type SupervisorMessage = { readonly type: 'stop' };

/** Worker → supervisor. Fencing tokens travel as decimal strings. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'leading'; readonly token: string }
  /** The leader started the job of a round (its result is written when the job is done). */
  | { readonly type: 'running'; readonly token: string; readonly round: number }
  /** The result of a round's job, written to the schedule store with the leader's term as its fencing token. */
  | { readonly type: 'work'; readonly token: string; readonly round: number }
  /** The worker stopped leading: `released` (it was told to stop) or a lock error code such as `LOCK_LOST`. */
  | { readonly type: 'stepped-down'; readonly token: string; readonly reason: string }
  | { readonly type: 'failed'; readonly error: string };
