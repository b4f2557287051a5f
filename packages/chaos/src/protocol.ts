/** The messages between the parent and its client processes (IPC with `serialization: 'advanced'`, so bigints pass). */
import type { HistoryEventInput } from '@fencelock/history-checker';
import type { ClientBackendConfig } from './backends.js';

/** Shape of a client's workload (FAULTS.md W1, W2, W4). */
export interface WorkloadParams {
  /** W1 hold time, as a share of the TTL: uniform in [holdMin, holdMax]. @default 0 – 1.5 */
  readonly holdMin: number;
  readonly holdMax: number;
  /** Share of operations that are W4 token probes (acquire, release at once) on the probe key. */
  readonly probeShare: number;
  /**
   * Share of W1 holds (per-lock backends only) taken without automatic extension and held past
   * their TTL: the lease runs out under the holder, which must see `lost`.
   */
  readonly abandonShare: number;
  /** W2: pause between fenced writes while holding, ms. */
  readonly writeGapMinMs: number;
  readonly writeGapMaxMs: number;
  /** Pause between operations, ms. */
  readonly idleMaxMs: number;
  /**
   * After its hold was lost, the client sends one more write straight to the fenced store with its
   * old token, bypassing the library — the in-flight write of a paused process (FAULTS F2).
   */
  readonly lateWrite: boolean;
  /** How long one acquire may wait, ms. */
  readonly waitMs: number;
  /**
   * Above 0: W1 holds are holds of permits of a counting semaphore of this limit on the W1 keys
   * (`acquireSemaphore`), one permit each, or one or two at random where the backend takes several
   * at once; without W2 writes (several holders at once is the point, and a fenced store keeps one
   * writer per key). 0: W1 holds are mutex holds.
   */
  readonly semaphoreLimit: number;
  /**
   * True: W1 holds are leaderships of an election named after the W1 key (`campaign` with the
   * client's proc as its value, `release` resigns), with W2 writes fenced by the term (S8). False:
   * W1 holds are mutex holds.
   */
  readonly election: boolean;
}

/** What the parent hands a client (as JSON in argv[2]). */
export interface ClientStartConfig {
  readonly proc: string;
  readonly seed: number;
  readonly backend: ClientBackendConfig;
  /** The fenced store's URL (W2). */
  readonly storeUrl: string;
  /** The W1/W2 keys and the W4 probe key. */
  readonly keys: readonly string[];
  readonly probeKey: string;
  /** The client stops by itself after this long, ms (the parent normally says `stop` first). */
  readonly durationMs: number;
  readonly workload: WorkloadParams;
}

export type ParentMessage = { readonly type: 'stop' };

export type ClientMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'event'; readonly event: HistoryEventInput }
  /** `loopDelayMaxMs`: the client's largest event-loop delay (timers fire that late at worst), for L1's ε. */
  | { readonly type: 'done'; readonly operations: number; readonly loopDelayMaxMs: number }
  | { readonly type: 'error'; readonly message: string };
