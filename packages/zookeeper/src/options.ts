import { LockRangeError, LockTypeError, type LockProviderOptions, readAdapterOptions, validateDurationMs } from '@fencelock/core/adapter';
import type { Client } from 'node-zookeeper-client';
import { type ResolvedAccess, type ZooKeeperAclOption, type ZooKeeperAuth, resolveAccess } from './access.js';
import type { ContenderNaming } from './contender-names.js';

/** The smallest session timeout accepted, in ms (ZooKeeper's own floor is 2 × tickTime). */
export const MIN_SESSION_TIMEOUT_MS = 1_000;
/** The session timeout of a client the provider opens, in ms. */
export const DEFAULT_SESSION_TIMEOUT_MS = 30_000;
/** The default lock root. */
export const DEFAULT_ROOT = '/fencelock';

/**
 * Options of {@link createZooKeeperLockProvider}. Give exactly one of `client` and `connectionString`.
 * Locks live as long as the ZooKeeper session (`capabilities.expiry` is `session`): there is no
 * per-lock TTL; the session timeout plays its role and is the provider's `defaultTtlMs`.
 */
export interface ZooKeeperLockProviderOptions extends Omit<LockProviderOptions, 'defaultTtlMs'> {
  /**
   * A node-zookeeper-client `Client` you created and connect yourself. The provider never closes it.
   * Its session timeout is the lock validity. Once its session has expired the client is dead (the
   * library does not open a new session), so the provider refuses further acquires with
   * `LOCK_BACKEND_UNAVAILABLE`; pass a `connectionString` instead to have sessions renewed for you.
   */
  readonly client?: Client;
  /**
   * `host:port[,host:port…][/chroot]`: the provider opens its own client (and a new session whenever
   * the previous one ended) and closes it in `close()`.
   */
  readonly connectionString?: string;
  /**
   * Session timeout requested for a client the provider opens, in ms. The server clamps it into its
   * `[minSessionTimeout, maxSessionTimeout]`: validity, keepalives, the default request timeout,
   * `defaultTtlMs` and `capabilities.ttlResolutionMs` follow the timeout it granted, from the first
   * connection on. Not allowed with `client`. At least 1000. @default 30_000
   */
  readonly sessionTimeoutMs?: number;
  /**
   * The znode under which every lock lives, as `<root>/<encoded key>`, and every semaphore, as
   * `<root>/#semaphores/<encoded key>` (Curator's `InterProcessSemaphoreV2` path), and every election,
   * as `<root>/#elections/<encoded name>` (Curator's `LeaderLatch` path). An absolute path, not `/`.
   * @default '/fencelock'
   */
  readonly root?: string;
  /**
   * How the provider names its own contender nodes:
   * - `curator` (default): exclusive `_c_<uuid>-lock-`, as Curator's `InterProcessMutex` (kazoo's
   *   `Lock` sees them when given `extra_lock_patterns=['-lock-']`); shared `_c_<uuid>-__READ__`;
   * - `curator-read-write`: exclusive `_c_<uuid>-__WRIT__` and shared `_c_<uuid>-__READ__`, as
   *   Curator's `InterProcessReadWriteLock`;
   * - `kazoo`: exclusive `<32 hex>__lock__` (kazoo's `Lock` and `WriteLock`), shared
   *   `<32 hex>__rlock__` (kazoo's `ReadLock`).
   * Every form is recognised as a contender whatever this option says. Semaphores and elections always
   * use Curator's names (`InterProcessSemaphoreV2`, `LeaderLatch`). @default 'curator'
   */
  readonly naming?: ContenderNaming;
  /**
   * How long one ZooKeeper request may wait for its reply, and how long a read or a try waits for a
   * connection, before it fails with `LOCK_BACKEND_UNAVAILABLE`, in ms (an acquire, semaphore acquire
   * or campaign that may wait longer waits for the connection until its own deadline, as it waits
   * for the lock). At most the session timeout
   * (refused with a RangeError otherwise); a server that grants a shorter session than was asked
   * shortens it to that. Keepalives are bounded by core's session keeper (at most a sixth of the
   * granted timeout) whatever this is. (Was `operationTimeoutMs`, which is now refused.)
   * @default the smaller of 5_000 and a third of the granted session timeout
   */
  readonly requestTimeoutMs?: number;
  /**
   * For a client the provider opens: the pause after every server was tried once, before trying
   * again (node-zookeeper-client's `spinDelay`), in ms. @default 200
   */
  readonly spinDelayMs?: number;
  /**
   * Delete a lock's znode (a semaphore's `leases`, `locks` and own znode) about 1 s after the last
   * contender left it (sequence numbers then restart
   * at 0, as with Curator's container nodes; tokens are czxids and are not affected). Off by default
   * with `naming: 'kazoo'`: kazoo's `Lock` creates the parent only once per object, so a long-lived
   * one reused on the path would fail with `NoNodeError` once it is gone. Set `true` there only if
   * no such object shares the paths.
   * @default true, and false with `naming: 'kazoo'`
   */
  readonly removeEmptyParents?: boolean;
  /**
   * Credentials a client the provider opens sends on every connection (ZooKeeper's `digest` scheme:
   * `{ scheme: 'digest', credentials: 'user:password' }`). Not allowed with `client`: authenticate
   * the client you pass with its `addAuthInfo`. Kept out of every error message and event.
   */
  readonly auth?: ZooKeeperAuth | readonly ZooKeeperAuth[];
  /**
   * The ACL of every znode the provider creates (the root's segments, lock znodes, contender nodes).
   * ZooKeeper checks CREATE and DELETE on a znode's parent, so this decides which identities can
   * queue for, and delete contenders of, a lock: give every identity that shares the locks and no other.
   * @default 'creator-all-world-read' with `auth` (the provider's identity may do anything, anyone may
   * read), else 'open' (anyone who reaches the ensemble may delete a holder's node)
   */
  readonly acl?: ZooKeeperAclOption;
}

/** Options after validation and defaults (internal). */
export interface ResolvedOptions {
  readonly client: Client | undefined;
  readonly connectionString: string | undefined;
  /** The requested session timeout (for a given client: its timeout when the provider was made). */
  readonly sessionTimeoutMs: number;
  readonly root: string;
  readonly naming: ContenderNaming;
  /** As given; see {@link sessionTiming} for the timeout in use. */
  readonly requestTimeoutMs: number | undefined;
  readonly spinDelayMs: number;
  readonly removeEmptyParents: boolean;
  readonly defaultWaitMs: number | undefined;
  readonly access: ResolvedAccess;
}

const KNOWN: readonly (keyof ZooKeeperLockProviderOptions & string)[] = [
  'client',
  'connectionString',
  'sessionTimeoutMs',
  'root',
  'naming',
  'requestTimeoutMs',
  'spinDelayMs',
  'removeEmptyParents',
  'defaultWaitMs',
  'auth',
  'acl',
];
// Names that once meant something here, or elsewhere: refused with what to use instead.
const REFUSED_WITH_HINT: Readonly<Record<string, string>> = {
  defaultTtlMs: 'locks live with the session: use sessionTimeoutMs',
  operationTimeoutMs: 'renamed: use requestTimeoutMs',
  heartbeatIntervalMs: "removed: core's session keeper renews the session every third of the granted session timeout",
};
/** The default bound of one request, in ms, when the session timeout is long (else a third of it). */
export const MAX_DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
const NAMINGS: readonly ContenderNaming[] = ['curator', 'curator-read-write', 'kazoo'];
// Characters ZooKeeper refuses in paths (PathUtils.validatePath), and relative segments.
// eslint-disable-next-line no-control-regex
const BAD_PATH_CHARS = /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]/u;

function isClient(value: unknown): value is Client {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Client).getChildren === 'function' &&
    typeof (value as Client).getSessionTimeout === 'function' &&
    typeof (value as Client).on === 'function'
  );
}

function validateRoot(root: unknown): string {
  if (typeof root !== 'string') throw new LockTypeError('options.root', 'options.root must be a string');
  const segments = root.split('/').slice(1);
  if (
    !root.startsWith('/') ||
    root === '/' ||
    root.endsWith('/') ||
    segments.some((segment) => segment === '' || segment === '.' || segment === '..') ||
    BAD_PATH_CHARS.test(root)
  ) {
    throw new LockRangeError('options.root', `options.root must be an absolute ZooKeeper path other than "/", got ${JSON.stringify(root)}`);
  }
  if (segments[0] === 'zookeeper') throw new LockRangeError('options.root', 'options.root must not be inside /zookeeper (reserved)');
  return root;
}

/** Validates options before any I/O (LockTypeError / LockRangeError) and fills in defaults. */
export function resolveOptions(options: ZooKeeperLockProviderOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new LockTypeError('options', 'options must be an object');
  for (const name of Object.keys(options)) {
    const hint = Object.hasOwn(REFUSED_WITH_HINT, name) ? REFUSED_WITH_HINT[name] : undefined;
    if (hint !== undefined) throw new LockTypeError(`options.${name}`, `unknown option "${name}" (${hint})`);
  }
  readAdapterOptions(options, KNOWN);
  const { client, connectionString } = options;
  if ((client === undefined) === (connectionString === undefined)) {
    throw new LockTypeError('options.connectionString', 'give exactly one of options.client and options.connectionString');
  }
  if (client !== undefined && !isClient(client)) {
    throw new LockTypeError('options.client', 'options.client must be a node-zookeeper-client Client');
  }
  if (connectionString !== undefined && (typeof connectionString !== 'string' || connectionString.trim() === '')) {
    throw new LockTypeError('options.connectionString', 'options.connectionString must be a non-empty string');
  }
  if (client !== undefined && options.sessionTimeoutMs !== undefined) {
    throw new LockTypeError('options.sessionTimeoutMs', 'options.sessionTimeoutMs is set on the client you pass, not here');
  }
  const sessionTimeoutMs = validateDurationMs(
    client === undefined ? (options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS) : client.getSessionTimeout(),
    client === undefined ? 'options.sessionTimeoutMs' : "the client's session timeout",
    MIN_SESSION_TIMEOUT_MS,
  );
  const requestTimeoutMs = options.requestTimeoutMs === undefined ? undefined : validateRequestTimeout(options.requestTimeoutMs, sessionTimeoutMs);
  const spinDelayMs = options.spinDelayMs === undefined ? 200 : validateDurationMs(options.spinDelayMs, 'options.spinDelayMs');
  const naming = options.naming ?? 'curator';
  if (!NAMINGS.includes(naming)) {
    throw new LockTypeError('options.naming', `options.naming must be one of ${NAMINGS.join(', ')}`);
  }
  // kazoo never deletes the parent itself and creates it once per Lock object: keep it for kazoo.
  const removeEmptyParents = options.removeEmptyParents ?? naming !== 'kazoo';
  if (typeof removeEmptyParents !== 'boolean') {
    throw new LockTypeError('options.removeEmptyParents', 'options.removeEmptyParents must be a boolean');
  }
  return {
    client,
    connectionString,
    sessionTimeoutMs,
    root: validateRoot(options.root ?? DEFAULT_ROOT),
    naming,
    requestTimeoutMs,
    spinDelayMs,
    removeEmptyParents,
    defaultWaitMs: options.defaultWaitMs,
    access: resolveAccess(options.auth, options.acl, client !== undefined),
  };
}

/**
 * A request bound of at most the session timeout. Not core's "at most a third" rule
 * (`validateRequestTimeoutMs`): that rule keeps a renewal's reply inside the TTL, and here no request
 * but the keepalive renews anything — core's session keeper bounds keepalives by a sixth of the
 * granted timeout on its own, and the session's deadline stands whatever other requests wait. A
 * bound as long as the session is a fair choice for a caller who would rather wait than fail (the
 * CLI waits up to 10 s, or the whole of a shorter session).
 */
function validateRequestTimeout(value: unknown, sessionTimeoutMs: number): number {
  const ms = validateDurationMs(value, 'options.requestTimeoutMs');
  if (ms > sessionTimeoutMs) {
    throw new LockRangeError(
      'options.requestTimeoutMs',
      `options.requestTimeoutMs (${ms} ms) must be at most the session timeout (${sessionTimeoutMs} ms): a reply later than that comes from a session that may have expired`,
    );
  }
  return ms;
}

/** What follows from a session timeout: the cadences of a session, in ms (internal). */
export interface SessionTiming {
  /** The session timeout these were derived from. */
  readonly timeoutMs: number;
  /**
   * How often validity advances without other traffic: core's session keeper sends a keepalive a
   * third of the timeout after the last answered request (`capabilities.ttlResolutionMs`).
   */
  readonly keepaliveIntervalMs: number;
  /** How long one request (or connecting) may wait. */
  readonly requestTimeoutMs: number;
}

/**
 * The timing of a session whose timeout is `timeoutMs`: the requested one before the server
 * answered, then the one it granted. Derived again on every connection, since a server may grant
 * anything within its own bounds.
 */
export function sessionTiming(options: ResolvedOptions, timeoutMs: number): SessionTiming {
  const requested = options.requestTimeoutMs ?? Math.min(MAX_DEFAULT_REQUEST_TIMEOUT_MS, Math.floor(timeoutMs / 3));
  // A grant shorter than the request shortens the bound with it (see validateRequestTimeout).
  return { timeoutMs, keepaliveIntervalMs: Math.ceil(timeoutMs / 3), requestTimeoutMs: Math.min(requested, timeoutMs) };
}
