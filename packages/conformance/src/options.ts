import type { LockCapabilities, LockProvider } from '@fencelock/core';

/**
 * An outage the harness can cause: a killed server, a paused one (SIGSTOP), a blackholed link, or
 * connections reset (a connection drop: the client sees its requests fail and reconnects).
 */
export type BackendOutage = 'kill' | 'pause' | 'blackhole' | 'reset';

/** Ends an outage: the backend serves again (restarted with its data, resumed, link healed) when it resolves. */
export type HealOutage = () => Promise<void>;

/**
 * Test-environment powers the suite uses for fault cases. Each is optional: a case whose power is
 * missing is registered as skipped, with the missing power in its name.
 */
export interface ConformanceHarness {
  /** Freezes the backend server (SIGSTOP) for `ms`, then resumes it (SIGCONT). Resolves after resuming. */
  pauseBackend?(ms: number): Promise<void>;
  /**
   * Kills the backend server (SIGKILL) and starts it again with the same configuration and data.
   * Resolves when it serves again.
   */
  restartBackend?(): Promise<void>;
  /**
   * Drops `provider`'s connection the way a crashed process would: no release, no session close.
   * The backend must then free the provider's locks by its own expiry (session timeout, lease TTL).
   */
  crashProvider?(provider: LockProvider): Promise<void>;
  /**
   * Deletes `key`'s lock record at the backend behind its holder's back, as an operator or another
   * tool would (`DEL` on every Redis or Redlock master, the holder's znode, the holder's etcd key),
   * and resolves once the backend has applied the delete. The suite's key is passed as the user gave
   * it; the harness encodes it as the adapter does.
   */
  deleteLock?(key: string): Promise<void>;
  /**
   * How many contenders wait for `key` at the backend right now (waiter keys, znodes, registrations:
   * what each waiting client leaves there), holders not counted. The suite's key is passed as the
   * user gave it; the harness encodes it as the adapter does.
   */
  backendWaiters?(key: string): Promise<number>;
  /**
   * Starts an outage of the backend for every provider the suite makes, and resolves once it is in
   * effect; the returned function ends it. `kill`: SIGKILL, healed by a restart with the same data.
   * `pause`: SIGSTOP, healed by SIGCONT. `blackhole`: the providers' connections (made through a
   * proxy the harness controls) stop carrying bytes either way, healed by letting them through.
   * `reset`: the providers' connections (through the proxy) are reset and new ones refused, healed
   * by letting them through; a session backend's session survives it when healed in time.
   * A kind left out is reported as a skipped case naming it.
   */
  readonly outages?: { readonly [K in BackendOutage]?: () => Promise<HealOutage> };
}

/**
 * The sections of the suite, each a `describe` block of its own: `basics`, `contention`, `load`,
 * `expiry` (expiry and extension), `fencing`, `read-write`, `lifecycle`, `bad-input`, `faults`,
 * `release` (release under faults), `semaphore`, `election`.
 */
export const CONFORMANCE_SECTIONS = [
  'basics',
  'contention',
  'load',
  'expiry',
  'fencing',
  'read-write',
  'lifecycle',
  'bad-input',
  'faults',
  'release',
  'semaphore',
  'election',
] as const;

/** One section of the suite (see {@link CONFORMANCE_SECTIONS}). */
export type ConformanceSection = (typeof CONFORMANCE_SECTIONS)[number];

/** What {@link describeLockProvider} needs. */
export interface ConformanceOptions {
  /** A label for the describe block, e.g. `redis (single)`. */
  readonly name: string;
  /**
   * Makes a fresh provider, as a separate client of the same backend would be. Called many times;
   * the suite closes every provider it made.
   */
  readonly createProvider: () => LockProvider | Promise<LockProvider>;
  /**
   * Capabilities the provider must report. An assertion, never a switch: a mismatch fails the
   * `capabilities` case; what the suite checks is decided by the provider's own capabilities.
   */
  readonly expectCapabilities?: Partial<LockCapabilities>;
  /** Powers for the fault cases. */
  readonly harness?: ConformanceHarness;
  /**
   * The TTL the expiry cases use, in ms; for `session` providers, the provider's session timeout is
   * used instead. @default max(capabilities.minTtlMs, 400)
   */
  readonly shortTtlMs?: number;
  /** Prefix of every key the suite makes (each case adds a random part). @default `conformance:` */
  readonly keyPrefix?: string;
  /** Multiplies every bounded wait of the suite, for slow environments. @default 1 */
  readonly timeScale?: number;
  /** Clients and rounds of the mutual-exclusion case. @default { clients: 4, rounds: 10 } */
  readonly concurrency?: { readonly clients: number; readonly rounds: number };
  /**
   * Registers only these sections, for a second run of the same backend that needs no more (another
   * client library through the same adapter, say). A provider passes the suite only when every
   * section passes somewhere. @default every section
   */
  readonly sections?: readonly ConformanceSection[];
}
