import { LockTypeError } from './errors.js';

/**
 * How strong the fencing tokens of a provider are.
 * - `global`: from a consensus log (ZooKeeper czxid, etcd revision): strictly increasing across every
 *   acquisition of a key, surviving any single-server failure the backend itself survives.
 * - `per-key`: from one primary's counter (a single Redis counter): strictly increasing per key while that
 *   server keeps its data; the adapter documents what keeps it so.
 * - `none`: no token; `fencingToken` is `undefined` (Redlock cannot produce a safe one).
 */
export type FencingLevel = 'global' | 'per-key' | 'none';

/**
 * What bounds a lock's life when its holder disappears.
 * - `per-lock`: each acquisition has its own TTL (`ttlMs`), extended explicitly or automatically.
 * - `session`: the lock lives as long as the client's session or lease (ZooKeeper, an etcd session
 *   lease); per-acquisition `ttlMs` and `autoExtend: false` are refused with `LOCK_UNSUPPORTED`.
 */
export type ExpiryModel = 'per-lock' | 'session';

/**
 * How soon a holder learns that its lock's record was deleted behind its back (an operator's `DEL`,
 * a znode or etcd key removed by another tool): its `signal` aborts with `LOCK_LOST`.
 * - `watch`: the backend tells the holder at once (a watch on its own record): within a round trip.
 * - `renewal`: at the next automatic extension, which finds the record gone (a third of the TTL at
 *   most, plus one request), or when validity ends if automatic extension is off.
 * - `validity`: only when the handle's validity ends.
 *
 * Until then another client may already hold the lock: fencing tokens are what keep a resource safe.
 */
export type DeletionNotice = 'watch' | 'renewal' | 'validity';

/**
 * What a provider offers of counting semaphores (`acquireSemaphore`).
 * - `none`: no semaphores; `acquireSemaphore` and `tryAcquireSemaphore` reject with `LOCK_UNSUPPORTED`.
 * - `single-permit`: each acquisition takes one permit; `permits` above 1 is refused with `LOCK_UNSUPPORTED`.
 * - `multi-permit`: an acquisition may take several permits at once, atomically (all or none).
 */
export type SemaphoreSupport = 'none' | 'single-permit' | 'multi-permit';

/**
 * What a provider offers of leader election (`campaign`, `leader`, `observe`), and how `observe`
 * learns that the leader changed.
 * - `none`: no elections; `campaign`, `tryCampaign`, `leader` and `observe` refuse with `LOCK_UNSUPPORTED`.
 * - `polled`: `observe` reads the leader every `pollMs`: a change is seen within that interval.
 * - `notified`: the backend tells `observe` of each change (a watch, a notification): within a round trip.
 */
export type ElectionSupport = 'none' | 'polled' | 'notified';

/**
 * Facts about a provider, normalised once and read by users, by core helpers, by the conformance
 * suite and by the documentation's guarantees table.
 */
export interface LockCapabilities {
  /** Strength of fencing tokens. */
  readonly fencing: FencingLevel;
  /** The handle's `signal` aborts when the lock is lost, even if the connection stays silent. */
  readonly lossDetection: boolean;
  /** `extend()` prolongs a held lock. Where false, `extend()` rejects with `LOCK_UNSUPPORTED`. */
  readonly extend: boolean;
  /** Waiters are woken by the backend when the lock is freed, not only by polling. */
  readonly notify: boolean;
  /**
   * Waiters acquire in the order they started waiting. Within one provider, waiting calls of a key
   * queue locally in arrival order and only the first contends at the backend, so between processes
   * the order is that in which each process's next caller reached the backend.
   */
  readonly fifo: boolean;
  /** `mode: 'shared'` (read locks) is supported beside `exclusive`. */
  readonly readWrite: boolean;
  /** What bounds the life of an abandoned lock. */
  readonly expiry: ExpiryModel;
  /** Granularity of TTLs on the backend, in ms (etcd leases are whole seconds: 1000). */
  readonly ttlResolutionMs: number;
  /** The smallest TTL the backend honours, in ms; smaller `ttlMs` values are refused. */
  readonly minTtlMs: number;
  /** How soon a holder notices its lock's record deleted behind its back. */
  readonly deletionNotice: DeletionNotice;
  /**
   * Counting semaphores (see {@link SemaphoreSupport}); their `limit` is at most `MAX_SEMAPHORE_LIMIT`
   * on every provider that has them. A backend that declares anything but `none` implements
   * `acquireSemaphore` and `inspectSemaphore` (checked when the provider is built).
   */
  readonly semaphore: SemaphoreSupport;
  /**
   * Leader election (see {@link ElectionSupport}). A backend that declares anything but `none`
   * implements `campaign` and `leader`, and `watchLeader` too for `notified` (checked when the
   * provider is built).
   */
  readonly election: ElectionSupport;
}

/** A partial capabilities object, as an adapter declares it; missing entries take safe defaults. */
export type LockCapabilitiesInit = Partial<LockCapabilities> & Pick<LockCapabilities, 'fencing'>;

const FENCING_LEVELS: readonly FencingLevel[] = ['global', 'per-key', 'none'];
const EXPIRY_MODELS: readonly ExpiryModel[] = ['per-lock', 'session'];
const DELETION_NOTICES: readonly DeletionNotice[] = ['watch', 'renewal', 'validity'];
const SEMAPHORE_SUPPORT: readonly SemaphoreSupport[] = ['none', 'single-permit', 'multi-permit'];
const ELECTION_SUPPORT: readonly ElectionSupport[] = ['none', 'polled', 'notified'];

/**
 * Fills in defaults (everything optional is `false`, `per-lock` expiry, 1 ms resolution, 1 ms minimum
 * TTL, deletion noticed when validity ends, no semaphores, no elections), checks every value, and freezes the result.
 */
export function normalizeCapabilities(init: LockCapabilitiesInit): LockCapabilities {
  if (!FENCING_LEVELS.includes(init.fencing)) {
    throw new LockTypeError('capabilities.fencing', `capabilities.fencing must be one of ${FENCING_LEVELS.join(', ')}`);
  }
  const expiry = init.expiry ?? 'per-lock';
  if (!EXPIRY_MODELS.includes(expiry)) {
    throw new LockTypeError('capabilities.expiry', `capabilities.expiry must be one of ${EXPIRY_MODELS.join(', ')}`);
  }
  const deletionNotice = init.deletionNotice ?? 'validity';
  if (!DELETION_NOTICES.includes(deletionNotice)) {
    throw new LockTypeError(
      'capabilities.deletionNotice',
      `capabilities.deletionNotice must be one of ${DELETION_NOTICES.join(', ')}`,
    );
  }
  const semaphore = init.semaphore ?? 'none';
  if (!SEMAPHORE_SUPPORT.includes(semaphore)) {
    throw new LockTypeError('capabilities.semaphore', `capabilities.semaphore must be one of ${SEMAPHORE_SUPPORT.join(', ')}`);
  }
  const election = init.election ?? 'none';
  if (!ELECTION_SUPPORT.includes(election)) {
    throw new LockTypeError('capabilities.election', `capabilities.election must be one of ${ELECTION_SUPPORT.join(', ')}`);
  }
  const positive = (name: keyof LockCapabilities, value: number | undefined, fallback: number): number => {
    const chosen = value ?? fallback;
    if (!Number.isFinite(chosen) || chosen <= 0) {
      throw new LockTypeError(`capabilities.${name}`, `capabilities.${name} must be a positive finite number`);
    }
    return chosen;
  };
  return Object.freeze({
    fencing: init.fencing,
    lossDetection: init.lossDetection === true,
    extend: init.extend === true,
    notify: init.notify === true,
    fifo: init.fifo === true,
    readWrite: init.readWrite === true,
    expiry,
    ttlResolutionMs: positive('ttlResolutionMs', init.ttlResolutionMs, 1),
    minTtlMs: positive('minTtlMs', init.minTtlMs, 1),
    deletionNotice,
    semaphore,
    election,
  });
}

/** The capability names in the order the guarantees table prints them. */
export const CAPABILITY_NAMES = [
  'fencing',
  'lossDetection',
  'extend',
  'notify',
  'fifo',
  'readWrite',
  'expiry',
  'ttlResolutionMs',
  'minTtlMs',
  'deletionNotice',
  'semaphore',
  'election',
] as const satisfies readonly (keyof LockCapabilities)[];

/**
 * Renders a Markdown guarantees table, one row per provider, from capabilities (never typed by hand).
 */
export function renderGuaranteesTable(rows: readonly { name: string; capabilities: LockCapabilities }[]): string {
  const cell = (value: LockCapabilities[keyof LockCapabilities]): string =>
    typeof value === 'boolean' ? (value ? 'yes' : 'no') : String(value);
  const header = `| provider | ${CAPABILITY_NAMES.join(' | ')} |`;
  const rule = `|${' --- |'.repeat(CAPABILITY_NAMES.length + 1)}`;
  const body = rows.map(
    ({ name, capabilities }) => `| ${name} | ${CAPABILITY_NAMES.map((n) => cell(capabilities[n])).join(' | ')} |`,
  );
  return [header, rule, ...body].join('\n');
}
