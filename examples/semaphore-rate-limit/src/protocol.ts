/** The messages between the coordinator (the parent process) and its worker processes, over Node's IPC channel. */

/** What the coordinator tells a worker at start-up (as its one command-line argument, JSON). */
export interface WorkerConfig {
  /** The worker's name in the output, e.g. `worker-2`. */
  readonly name: string;
  /** `redis://` URL of the server holding the semaphore. */
  readonly redisUrl: string;
  /** Prefix of every Redis key this run uses, so runs never see each other's keys. */
  readonly keyPrefix: string;
  /** The fake API's base URL. */
  readonly apiUrl: string;
  /** The semaphore's limit: how many calls may be in flight at once, across all workers. */
  readonly cap: number;
  /** How many API calls this worker makes. */
  readonly calls: number;
}

/** Coordinator → worker: start calling (sent once every worker is ready, so they all contend). */
export type CoordinatorMessage = { readonly type: 'go' };

/** What a worker did. */
export interface WorkerReport {
  readonly name: string;
  /** Calls the API answered 200. */
  readonly ok: number;
  /** Calls the API refused (429 or 400). */
  readonly refused: number;
  /** The fencing token of the permit each call was made under (decimal strings). */
  readonly tokens: readonly string[];
  /** Calls that waited for a permit. */
  readonly waited: number;
}

/** Worker → coordinator. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly report: WorkerReport }
  | { readonly type: 'failed'; readonly error: string };
