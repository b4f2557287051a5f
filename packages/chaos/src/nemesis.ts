/**
 * What a fault scenario can do from the parent, and the bookkeeping it relies on: who holds which
 * lock right now (from the clients' events), the nemesis records, and the windows during which no
 * acquisition may succeed (quorum loss).
 */
import type { JsonValue } from '@fencelock/history-checker';
import type { TcpProxy } from '@fencelock/test-infra';
import type { WorkloadParams } from './protocol.js';
import type { BackendServers } from './servers.js';
import type { Rng } from './rng.js';

/** A lock currently held, as the parent saw it from `acquire ok`. */
export interface CurrentHold {
  readonly proc: string;
  readonly key: string;
  readonly lockId: string;
  /** Parent monotonic ns of the `acquire ok`. */
  readonly since: number;
  /**
   * Monotonic ns at which the holder's last grant or renewal runs out, as it reported it (`null`: it
   * never expires). A provisional grant (a direct hand-off) starts short and is renewed soon after.
   */
  readonly validUntil: number | null;
}

/** A window in which the harness asserts that nobody acquires (FAULTS L2: CP backends under quorum loss). */
export interface NoAcquireWindow {
  readonly from: number;
  readonly to: number;
  readonly why: string;
}

/** The tools a scenario injects faults with. Every wait is bounded and ends early when the run stops. */
export interface NemesisContext {
  readonly rng: Rng;
  readonly ttlMs: number;
  readonly servers: BackendServers;
  readonly signal: AbortSignal;
  /** Appends a nemesis record (`start-X`/`stop-X` open and close a fault window). */
  log(f: string, target?: string, value?: JsonValue): void;
  /** Sleeps `ms` or until the run stops; resolves false if it stopped. */
  sleep(ms: number): Promise<boolean>;
  /** Locks held now. */
  holds(): CurrentHold[];
  /**
   * Waits (≤ `timeoutMs`) for a hold that started at or after `after` (parent ns) and, with
   * `minValidityMs`, whose validity runs at least that long past now (a renewal counts when it comes);
   * undefined on timeout.
   */
  waitForHold(options: { after?: number; minValidityMs?: number; timeoutMs: number }): Promise<CurrentHold | undefined>;
  /** Live client procs. */
  procs(): string[];
  pauseClient(proc: string): void;
  resumeClient(proc: string): void;
  /** kill -9 a client; with `respawn`, starts a replacement (a new proc id) afterwards. */
  killClient(proc: string, respawn: boolean): Promise<void>;
  /** The client's proxies (one per server), when the run proxies clients. */
  proxiesOf(proc: string): readonly TcpProxy[] | undefined;
  /** Declares a window during which no acquire may succeed. */
  noAcquireWindow(window: NoAcquireWindow): void;
  /** Parent monotonic ns. */
  now(): number;
}

/** One fault (catalogue id + name) and how to inject it once. */
export interface Scenario {
  /** FAULTS.md id: `F1`, `F10`, … (`F0` = no fault). */
  readonly id: string;
  readonly name: string;
  /** A negative control: the checker MUST find a violation. */
  readonly expectViolation?: boolean;
  /**
   * The outcome is a race, not a guarantee: the fault takes the lock away on the server at the
   * moment the holder's connection or session ends, and the holder only learns of it when its own
   * process reads that end (PostgreSQL, whose locks live exactly as long as the session). A
   * violation is reported, but does not fail the run.
   */
  readonly race?: boolean;
  /** Route every client through its own TCP proxies. */
  readonly proxies?: boolean;
  /** Redis / Redlock servers with AOF `appendfsync always`. */
  readonly persistence?: boolean;
  /** Overrides of the backend's TTL for this scenario, ms. */
  readonly ttlMs?: number;
  /** Workload overrides (controls want long holds on one contended key). */
  readonly workload?: Partial<WorkloadParams>;
  /** How many W1/W2 keys. @default 2 */
  readonly keys?: number;
  /** Injects the fault once and heals it. */
  inject(context: NemesisContext): Promise<void>;
}
