import { LockRangeError, LockTypeError, type LockProviderOptions, validateDurationMs } from '@fencelock/core';
import type { Client } from 'node-zookeeper-client';
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
   * `[minSessionTimeout, maxSessionTimeout]`: validity, heartbeats, the default operation timeout,
   * `defaultTtlMs` and `capabilities.ttlResolutionMs` follow the timeout it granted, from the first
   * connection on. Not allowed with `client`. At least 1000. @default 30_000
   */
  readonly sessionTimeoutMs?: number;
  /**
   * The znode under which every lock lives, as `<root>/<encoded key>`. An absolute path, not `/`.
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
   * Every form is recognised as a contender whatever this option says. @default 'curator'
   */
  readonly naming?: ContenderNaming;
  /**
   * How often the provider asks the server for a cheap answer (`exists /`) to renew its own view of
   * the session deadline, in ms. Below a third of the requested session timeout; when the server
   * grants less than was asked, the interval shrinks in the same ratio.
   * @default the granted session timeout / 6
   */
  readonly heartbeatIntervalMs?: number;
  /**
   * How long one ZooKeeper request may wait for its reply (also: for a connection) before the
   * operation fails with `LOCK_BACKEND_UNAVAILABLE`, in ms.
   * @default the granted session timeout (the requested one until the first connection)
   */
  readonly operationTimeoutMs?: number;
  /**
   * For a client the provider opens: the pause after every server was tried once, before trying
   * again (node-zookeeper-client's `spinDelay`), in ms. @default 200
   */
  readonly spinDelayMs?: number;
  /**
   * Delete a lock's znode when the last contender leaves it (sequence numbers then restart at 0,
   * as with Curator's container nodes; tokens are czxids and are not affected). Set `false` if long-
   * lived kazoo `Lock` objects share the path: kazoo creates the parent only once per object.
   * @default true
   */
  readonly removeEmptyParents?: boolean;
}

/** Options after validation and defaults (internal). */
export interface ResolvedOptions {
  readonly client: Client | undefined;
  readonly connectionString: string | undefined;
  /** The requested session timeout (for a given client: its timeout when the provider was made). */
  readonly sessionTimeoutMs: number;
  readonly root: string;
  readonly naming: ContenderNaming;
  /** As given; see {@link sessionTiming} for the interval in use. */
  readonly heartbeatIntervalMs: number | undefined;
  /** As given; see {@link sessionTiming} for the timeout in use. */
  readonly operationTimeoutMs: number | undefined;
  readonly spinDelayMs: number;
  readonly removeEmptyParents: boolean;
  readonly defaultWaitMs: number | undefined;
}

const KNOWN = new Set([
  'client',
  'connectionString',
  'sessionTimeoutMs',
  'root',
  'naming',
  'heartbeatIntervalMs',
  'operationTimeoutMs',
  'spinDelayMs',
  'removeEmptyParents',
  'defaultWaitMs',
]);
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
    if (!KNOWN.has(name)) {
      const hint = name === 'defaultTtlMs' ? ' (locks live with the session: use sessionTimeoutMs)' : '';
      throw new LockTypeError(`options.${name}`, `unknown option "${name}"${hint}`);
    }
  }
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
  const heartbeatIntervalMs =
    options.heartbeatIntervalMs === undefined ? undefined : validateDurationMs(options.heartbeatIntervalMs, 'options.heartbeatIntervalMs');
  if (heartbeatIntervalMs !== undefined && heartbeatIntervalMs >= sessionTimeoutMs / 3) {
    throw new LockRangeError('options.heartbeatIntervalMs', 'options.heartbeatIntervalMs must be below a third of the session timeout');
  }
  const operationTimeoutMs =
    options.operationTimeoutMs === undefined ? undefined : validateDurationMs(options.operationTimeoutMs, 'options.operationTimeoutMs');
  const spinDelayMs = options.spinDelayMs === undefined ? 200 : validateDurationMs(options.spinDelayMs, 'options.spinDelayMs');
  const naming = options.naming ?? 'curator';
  if (!NAMINGS.includes(naming)) {
    throw new LockTypeError('options.naming', `options.naming must be one of ${NAMINGS.join(', ')}`);
  }
  const removeEmptyParents = options.removeEmptyParents ?? true;
  if (typeof removeEmptyParents !== 'boolean') {
    throw new LockTypeError('options.removeEmptyParents', 'options.removeEmptyParents must be a boolean');
  }
  return {
    client,
    connectionString,
    sessionTimeoutMs,
    root: validateRoot(options.root ?? DEFAULT_ROOT),
    naming,
    heartbeatIntervalMs,
    operationTimeoutMs,
    spinDelayMs,
    removeEmptyParents,
    defaultWaitMs: options.defaultWaitMs,
  };
}

/** What follows from a session timeout: the cadences of a session, in ms (internal). */
export interface SessionTiming {
  /** The session timeout these were derived from. */
  readonly timeoutMs: number;
  /** How often a heartbeat renews the session deadline (also the step of `ttlResolutionMs`). */
  readonly heartbeatIntervalMs: number;
  /** How long one request (or connecting) may wait. */
  readonly operationTimeoutMs: number;
}

/**
 * The timing of a session whose timeout is `timeoutMs`: the requested one before the server
 * answered, then the one it granted. Derived again on every connection, since a server may grant
 * anything within its own bounds.
 */
export function sessionTiming(options: ResolvedOptions, timeoutMs: number): SessionTiming {
  const given = options.heartbeatIntervalMs;
  const heartbeatIntervalMs =
    given === undefined
      ? Math.max(50, Math.floor(timeoutMs / 6))
      : // An interval chosen for the requested timeout keeps its share of a smaller grant: a 3x smaller
        // session with the same interval would be lost on one late heartbeat.
        Math.max(1, Math.floor(given * Math.min(1, timeoutMs / options.sessionTimeoutMs)));
  return { timeoutMs, heartbeatIntervalMs, operationTimeoutMs: options.operationTimeoutMs ?? timeoutMs };
}
