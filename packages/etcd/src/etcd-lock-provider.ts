import {
  BaseLockProvider,
  LockError,
  LockErrorCode,
  LockRangeError,
  LockTypeError,
  type LockHandle,
  type LockProviderOptions,
  readAdapterOptions,
  validateDurationMs,
  validateRequestTimeoutMs,
} from '@fencelock/core/adapter';
import { type ComparatorBuilder, Etcd3, type IOptions } from 'etcd3';
import { EtcdBackend } from './etcd-backend.js';
import { EtcdCalls } from './etcd-calls.js';
import type { KeyEncoding } from './key-encoding.js';

/** Options of {@link createEtcdLockProvider}. Give exactly one of `client` and `connection`. */
export interface EtcdLockProviderOptions extends Omit<LockProviderOptions, 'defaultTtlMs'> {
  /** An existing etcd3 client. The provider never closes it. */
  readonly client?: Etcd3;
  /** etcd3 connection options (`hosts`, credentials, …); the provider opens the client and closes it in `close()`. */
  readonly connection?: IOptions;
  /**
   * Prepended to every lock name. Waiter keys are `<keyPrefix><encoded key>/<lease id in hex>`;
   * a semaphore's contender keys are `<keyPrefix>\0fencelock-semaphore/<escaped key>/<lease id in hex>`,
   * an election's candidacy keys `<keyPrefix>%election/<escaped name>/<lease id in hex>` (see
   * `electionName`; `etcdctl elect` takes that name), ranges apart from every lock's.
   * @default 'fencelock/'
   */
  readonly keyPrefix?: string;
  /**
   * `escape` (default) percent-encodes `%`, `/` and control characters in the user key, so that the
   * encoding is injective and no lock's range contains another lock's waiters (`a` never sees `a/b`).
   * `as-is` uses the key verbatim, exactly as `etcdctl lock NAME` / Go's `concurrency.NewMutex` do
   * (use it with `keyPrefix: ''` to share locks with them by name; then `a/b`'s holder blocks `a`, as in Go).
   * The lock keys `%election` and `%election/…` are refused then: elections live there.
   * @default 'escape'
   */
  readonly keyEncoding?: KeyEncoding;
  /**
   * The TTL of the provider's session lease, in ms: how long the locks of a crashed or cut-off
   * process outlive it. etcd leases are whole seconds, so it is rounded UP to a second; at least 2000.
   * Validity is computed from the TTL etcd actually grants. Locks cannot have their own TTL
   * (`capabilities.expiry` is `session`): `options.ttlMs` on acquire is refused.
   * @default 10_000
   */
  readonly sessionTtlMs?: number;
  /**
   * The deadline of each etcd request, in ms. At most a third of the session TTL (after rounding up
   * to seconds), so that a keepalive's reply can arrive before the lease runs out; a larger value is
   * refused with a RangeError. Keepalives get at most a sixth of the TTL whatever this is.
   * @default the smaller of 5_000 and a third of the session TTL (3_333 with the default TTL)
   */
  readonly requestTimeoutMs?: number;
  /**
   * How often a waiter re-checks its place even without a watch event, in ms (a safety net for a
   * silent watch stream; hand-offs come from the watch).
   * @default 5_000
   */
  readonly recheckIntervalMs?: number;
}

/** The etcd-side identity of a held lock: what a guarded etcd transaction compares on. */
export interface EtcdLockOwnership {
  /** The holder's own waiter key in etcd, e.g. `fencelock/jobs/694d7f3a1c2b9e05`. */
  readonly etcdKey: string;
  /** Its create revision, which is also the handle's fencing token. */
  readonly createRevision: bigint;
  /** The session lease the key is attached to (decimal). */
  readonly leaseId: string;
}

const DEFAULT_SESSION_TTL_MS = 10_000;
const MAX_DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
const DEFAULT_RECHECK_INTERVAL_MS = 5_000;
const MIN_SESSION_TTL_MS = 2_000;
const KNOWN_OPTIONS: readonly (keyof EtcdLockProviderOptions & string)[] = [
  'client',
  'connection',
  'keyPrefix',
  'keyEncoding',
  'sessionTtlMs',
  'requestTimeoutMs',
  'recheckIntervalMs',
  'defaultWaitMs',
];

/**
 * Distributed locks on etcd, with the recipe of etcd's own `clientv3/concurrency.Mutex`: one lease
 * per provider session kept alive by keepalives, one waiter key per acquisition ordered by create
 * revision, each waiter watching only its predecessor (FIFO, no thundering herd), the create revision
 * as a global fencing token, and shared (read) locks on the same queue. Counting semaphores
 * (`acquireSemaphore`, multi-permit) use the same recipe with the first N permits holding; leader
 * elections (`campaign`, `observe`) are etcd's `concurrency.Election`, as `etcdctl elect` runs it.
 */
export class EtcdLockProvider extends BaseLockProvider {
  readonly #backend: EtcdBackend;

  constructor(options: EtcdLockProviderOptions) {
    const settings = validateOptions(options);
    const client = options.client ?? new Etcd3(options.connection as IOptions);
    const backend = new EtcdBackend({
      calls: new EtcdCalls(client, settings.requestTimeoutMs, settings.keyPrefix, options.client === undefined ? options.connection : undefined),
      ownsClient: options.client === undefined,
      keyPrefix: settings.keyPrefix,
      keyEncoding: settings.keyEncoding,
      sessionTtlSeconds: settings.sessionTtlSeconds,
      requestTimeoutMs: settings.requestTimeoutMs,
      recheckIntervalMs: settings.recheckIntervalMs,
    });
    // Session providers: core reads `defaultTtlMs` as the session timeout (e.g. the conformance suite).
    super(backend, { defaultTtlMs: settings.sessionTtlSeconds * 1000, defaultWaitMs: options.defaultWaitMs });
    this.#backend = backend;
  }

  /**
   * What a guarded etcd transaction needs to compare on while `handle` holds its lock (etcd Go's
   * `Mutex.IsOwner()`): the holder's own key and its create revision.
   * @throws LockError `LOCK_NOT_HELD` when the handle is not a held lock of this provider.
   */
  ownership(handle: LockHandle): EtcdLockOwnership {
    const held = handle.isHeld() ? this.#backend.held(handle.ownerId) : undefined;
    if (held === undefined || held.key !== handle.key) {
      throw new LockError(LockErrorCode.NOT_HELD, `lock "${handle.key}" is not held by this etcd provider`, { key: handle.key });
    }
    return { etcdKey: held.waiterKey, createRevision: held.createRevision, leaseId: held.leaseId };
  }

  /**
   * Starts an etcd transaction on `client` that succeeds only while `handle` still holds its lock:
   * `client.if(ownKey, 'Create', '==', createRevision)`. Add the guarded writes with `.then(...)`,
   * run it with `.commit()`, and read `succeeded`. A holder whose lease expired (its key was
   * deleted), or whose key was replaced, cannot pass the comparison.
   *
   * ```ts
   * const result = await provider.ifOwner(lock, client).then(client.put('config').value('v2')).commit();
   * if (!result.succeeded) throw new Error('lost the lock before writing');
   * ```
   * @throws LockError `LOCK_NOT_HELD` when the handle is not a held lock of this provider.
   */
  ifOwner(handle: LockHandle, client: Etcd3): ComparatorBuilder {
    const { etcdKey, createRevision } = this.ownership(handle);
    return client.if(etcdKey, 'Create', '==', createRevision.toString());
  }
}

/** Creates an etcd lock provider. See {@link EtcdLockProviderOptions}. */
export function createEtcdLockProvider(options: EtcdLockProviderOptions): EtcdLockProvider {
  return new EtcdLockProvider(options);
}

interface ValidatedOptions {
  readonly keyPrefix: string;
  readonly keyEncoding: KeyEncoding;
  readonly sessionTtlSeconds: number;
  readonly requestTimeoutMs: number;
  readonly recheckIntervalMs: number;
}

// Refuses unknown options before anything is opened: a misspelt option must not fall back to a default.
function validateOptions(given: EtcdLockProviderOptions): ValidatedOptions {
  const options = readAdapterOptions(given, KNOWN_OPTIONS);
  if ((options.client === undefined) === (options.connection === undefined)) {
    throw new LockTypeError('options', 'give exactly one of options.client (an Etcd3) and options.connection (etcd3 options)');
  }
  if (options.client !== undefined && !(options.client instanceof Etcd3)) {
    throw new LockTypeError('options.client', 'options.client must be an Etcd3 client from the etcd3 package');
  }
  if (options.connection !== undefined && (typeof options.connection !== 'object' || options.connection === null)) {
    throw new LockTypeError('options.connection', 'options.connection must be an etcd3 options object');
  }
  const keyPrefix = options.keyPrefix ?? 'fencelock/';
  if (typeof keyPrefix !== 'string') throw new LockTypeError('options.keyPrefix', 'options.keyPrefix must be a string');
  if (!keyPrefix.isWellFormed()) throw new LockRangeError('options.keyPrefix', 'options.keyPrefix must be well-formed Unicode');
  const keyEncoding = options.keyEncoding ?? 'escape';
  if (keyEncoding !== 'escape' && keyEncoding !== 'as-is') {
    throw new LockTypeError('options.keyEncoding', "options.keyEncoding must be 'escape' or 'as-is'");
  }
  const sessionTtlMs = validateDurationMs(options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS, 'options.sessionTtlMs', MIN_SESSION_TTL_MS);
  // etcd leases are whole seconds: round up, so 1500 ms never becomes 1 s.
  const sessionTtlSeconds = Math.ceil(sessionTtlMs / 1000);
  const ttlMs = sessionTtlSeconds * 1000;
  // The default shrinks with the TTL rather than refusing a short session for a timeout nobody chose.
  const requestTimeoutMs = validateRequestTimeoutMs(
    options.requestTimeoutMs ?? Math.min(MAX_DEFAULT_REQUEST_TIMEOUT_MS, Math.floor(ttlMs / 3)),
    ttlMs,
    'options.sessionTtlMs',
  );
  const recheckIntervalMs = validateDurationMs(options.recheckIntervalMs ?? DEFAULT_RECHECK_INTERVAL_MS, 'options.recheckIntervalMs', 10);
  return { keyPrefix, keyEncoding, sessionTtlSeconds, requestTimeoutMs, recheckIntervalMs };
}
