import {
  BaseLockProvider,
  LockRangeError,
  LockTypeError,
  type LockProviderOptions,
  readAdapterOptions,
  validateDurationMs,
  validateRequestTimeoutMs,
} from '@fencelock/core/adapter';
import type pg from 'pg';
import type { ConnectionSource } from './connection-source.js';
import { DEFAULT_NAMESPACE, type LockIdFunction, advisoryLockId } from './lock-id.js';
import type { PgSession } from './pg-session.js';
import { PostgresBackend } from './postgres-backend.js';
import { semaphoreStatements } from './semaphore-sql.js';
import { DEFAULT_TABLE, isTableName, statements } from './sql.js';

/**
 * Options of {@link createPostgresLockProvider}. Give exactly one of `pool`, `client` and `connection`.
 * The provider keeps ONE connection as its own server session: its locks live exactly as long as it.
 */
export interface PostgresLockProviderOptions extends Omit<LockProviderOptions, 'defaultTtlMs'> {
  /** A `pg.Pool`: the provider checks one client out, keeps it, and destroys it (never returns it) in `close()`. */
  readonly pool?: pg.Pool;
  /**
   * A connected `pg.Client` the provider uses as its session. It is never closed by the provider;
   * give the provider a client of its own (its locks are the client's session's).
   */
  readonly client?: pg.Client;
  /** A connection string or `pg.ClientConfig`: the provider opens its own `pg.Client` and ends it in `close()`. */
  readonly connection?: string | pg.ClientConfig;
  /**
   * The table of fencing counters (`table` or `schema.table`, plain identifiers), created on first use.
   * @default 'fencelock_tokens'
   */
  readonly table?: string;
  /**
   * Hashed in front of every key to make its advisory lock id (see {@link advisoryLockId}): two
   * applications sharing a database keep apart by choosing different namespaces.
   * @default 'fencelock:'
   */
  readonly namespace?: string;
  /**
   * Maps a key to its advisory lock id instead of the hash: a user-chosen numeric id (e.g. a row's
   * primary key) rules out collisions and matches what other programs lock with
   * `pg_advisory_lock(<id>)`. Must return a signed 64-bit `bigint`.
   */
  readonly lockId?: LockIdFunction;
  /**
   * The LISTEN/NOTIFY channel on which releases wake waiters (a plain identifier).
   * @default 'fencelock_release'
   */
  readonly channel?: string;
  /**
   * How long a silent session keeps its locks, in ms: the handle's validity counts from the send time
   * of the last answered request, and the server is told the same (`idle_session_timeout`), so it
   * ends a silent client's session (and frees its locks) no sooner. A keepalive query runs every
   * third of it. Per-lock TTLs are refused (`capabilities.expiry` is `session`).
   * @default 10_000
   */
  readonly sessionTtlMs?: number;
  /**
   * The bound of each PostgreSQL request (and of connecting), in ms: at most a third of the session TTL.
   * @default the smaller of 5_000 and a third of the session TTL
   */
  readonly requestTimeoutMs?: number;
}

const DEFAULT_SESSION_TTL_MS = 10_000;
const MIN_SESSION_TTL_MS = 1_000;
const MAX_DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
const DEFAULT_CHANNEL = 'fencelock_release';
const CHANNEL = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
const KNOWN_OPTIONS: readonly (keyof PostgresLockProviderOptions & string)[] = [
  'pool',
  'client',
  'connection',
  'table',
  'namespace',
  'lockId',
  'channel',
  'sessionTtlMs',
  'requestTimeoutMs',
  'defaultWaitMs',
];

/**
 * Distributed locks on PostgreSQL: session advisory locks on one server session the provider
 * dedicates, fencing tokens from a durable per-key counter bumped by the acquiring statement,
 * waiters woken by LISTEN/NOTIFY, and a loss signal when the session ends or goes silent.
 */
export class PostgresLockProvider extends BaseLockProvider {
  readonly #backend: PostgresBackend;

  constructor(options: PostgresLockProviderOptions) {
    const settings = validateOptions(options);
    const backend = new PostgresBackend(settings);
    // Session providers: core reads `defaultTtlMs` as the session timeout (e.g. the conformance suite).
    super(backend, { defaultTtlMs: settings.sessionTtlMs, defaultWaitMs: options.defaultWaitMs });
    this.#backend = backend;
  }

  /**
   * The server process id of the provider's session, once one is open (what `pg_terminate_backend`
   * or `pg_stat_activity` name), else `undefined`.
   */
  get backendPid(): number | undefined {
    const session: PgSession | undefined = this.#backend.session;
    return session?.alive ? session.pid : undefined;
  }
}

/** Creates a PostgreSQL lock provider. See {@link PostgresLockProviderOptions}. */
export function createPostgresLockProvider(options: PostgresLockProviderOptions): PostgresLockProvider {
  return new PostgresLockProvider(options);
}

type ValidatedOptions = ConstructorParameters<typeof PostgresBackend>[0];

function isPool(value: object): value is pg.Pool {
  return typeof (value as { connect?: unknown }).connect === 'function' && typeof (value as { totalCount?: unknown }).totalCount === 'number';
}

function isClient(value: object): value is pg.Client {
  const client = value as { query?: unknown; on?: unknown; totalCount?: unknown };
  return typeof client.query === 'function' && typeof client.on === 'function' && client.totalCount === undefined;
}

// Refuses bad options before anything is opened: a misspelt option must not fall back to a default.
function validateOptions(given: PostgresLockProviderOptions): ValidatedOptions {
  const options = readAdapterOptions(given, KNOWN_OPTIONS);
  const sources = [options.pool, options.client, options.connection].filter((source) => source !== undefined);
  if (sources.length !== 1) {
    throw new LockTypeError('options', 'give exactly one of options.pool (a pg.Pool), options.client (a pg.Client) and options.connection (a connection string or pg.ClientConfig)');
  }
  let source: ConnectionSource;
  if (options.pool !== undefined) {
    if (typeof options.pool !== 'object' || options.pool === null || !isPool(options.pool)) throw new LockTypeError('options.pool', 'options.pool must be a pg.Pool');
    source = { kind: 'pool', pool: options.pool };
  } else if (options.client !== undefined) {
    if (typeof options.client !== 'object' || options.client === null || !isClient(options.client)) {
      throw new LockTypeError('options.client', 'options.client must be a pg.Client (a pg.Pool goes in options.pool)');
    }
    source = { kind: 'client', client: options.client };
  } else {
    const connection = options.connection;
    if (typeof connection !== 'string' && (typeof connection !== 'object' || connection === null || Array.isArray(connection))) {
      throw new LockTypeError('options.connection', 'options.connection must be a connection string or a pg.ClientConfig object');
    }
    if (typeof connection === 'string' && connection.length === 0) throw new LockRangeError('options.connection', 'options.connection must not be empty');
    source = { kind: 'connection', config: connection };
  }
  const table = options.table ?? DEFAULT_TABLE;
  if (typeof table !== 'string') throw new LockTypeError('options.table', 'options.table must be a string');
  if (!isTableName(table)) throw new LockRangeError('options.table', `options.table must be "table" or "schema.table" of plain identifiers (letters, digits, _), got "${table}"`);
  const channel = options.channel ?? DEFAULT_CHANNEL;
  if (typeof channel !== 'string') throw new LockTypeError('options.channel', 'options.channel must be a string');
  if (!CHANNEL.test(channel)) throw new LockRangeError('options.channel', `options.channel must be a plain identifier (letters, digits, _), got "${channel}"`);
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  if (typeof namespace !== 'string') throw new LockTypeError('options.namespace', 'options.namespace must be a string');
  if (!namespace.isWellFormed()) throw new LockRangeError('options.namespace', 'options.namespace must be well-formed Unicode');
  if (options.lockId !== undefined && options.namespace !== undefined) {
    throw new LockTypeError('options', 'give options.lockId or options.namespace, not both (the namespace only feeds the default hash)');
  }
  if (options.lockId !== undefined && typeof options.lockId !== 'function') throw new LockTypeError('options.lockId', 'options.lockId must be a function (key) => bigint');
  const lockId: LockIdFunction = options.lockId ?? ((key) => advisoryLockId(key, namespace));
  const sessionTtlMs = validateDurationMs(options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS, 'options.sessionTtlMs', MIN_SESSION_TTL_MS);
  const requestTimeoutMs = validateRequestTimeoutMs(
    options.requestTimeoutMs ?? Math.min(MAX_DEFAULT_REQUEST_TIMEOUT_MS, Math.floor(sessionTtlMs / 3)),
    sessionTtlMs,
    'options.sessionTtlMs',
  );
  return { source, statements: statements(table), semaphoreStatements: semaphoreStatements(table), table, channel, lockId, sessionTtlMs, requestTimeoutMs };
}
