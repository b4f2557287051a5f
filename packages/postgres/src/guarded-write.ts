import {
  LockError,
  LockErrorCode,
  LockRangeError,
  LockTypeError,
  backendUnavailableError,
  readAdapterOptions,
  validateDurationMs,
  validateKey,
  withRequestTimeout,
} from '@fencelock/core/adapter';
import type pg from 'pg';
import { isCreateRace, sqlState } from './sql-state.js';
import { isTableName, quoteIdentifier } from './sql.js';

/** The default name of the table in which {@link guardedWrite} records each resource's highest token. */
export const DEFAULT_FENCES_TABLE = 'fencelock_fences';

/** Where {@link guardedWrite} runs its transaction: a pool (one client is checked out) or one client. */
export type GuardedWriteDatabase = pg.Pool | pg.ClientBase;

/** Options of {@link guardedWrite}. */
export interface GuardedWriteOptions {
  /**
   * The protected resource's name: the fence row the token is checked against (usually the lock's
   * key). Non-empty, well-formed, at most 512 UTF-8 bytes, byte-exact (the rules of a lock key).
   */
  readonly resource: string;
  /** The fencing token of the lock held for the resource (`lock.fencingToken`). */
  readonly token: bigint;
  /**
   * Aborted when the lock is known lost (`lock.signal`): checked before the transaction begins and
   * again before it commits, so a write whose lock is already known gone is rolled back without
   * waiting for the fence. The fence alone is what refuses a holder that does not know yet.
   */
  readonly signal?: AbortSignal;
  /**
   * Whether a write with the same token as the last accepted one is accepted too. `false` (the
   * default): each token writes once, so a stale holder can never apply its write twice, and a token
   * handed out again (asynchronous failover of the token table's server) cannot write beside its
   * first holder. `true`: one hold may make several guarded writes to the resource.
   * @default false
   */
  readonly acceptSameToken?: boolean;
  /**
   * The fence table (`table` or `schema.table`, plain identifiers), created on first use: one row per
   * resource, `(resource text primary key, token numeric)`.
   * @default 'fencelock_fences'
   */
  readonly table?: string;
  /**
   * The bound, in ms, of each statement the helper sends itself (connecting, BEGIN, the fence check,
   * COMMIT) and of the wait for the fence row while another guarded write of the same resource holds
   * it (`lock_timeout`). The caller's own statements are not bounded by it.
   * @default 5_000
   */
  readonly timeoutMs?: number;
}

const KNOWN_OPTIONS: readonly (keyof GuardedWriteOptions & string)[] = ['resource', 'token', 'signal', 'acceptSameToken', 'table', 'timeoutMs'];
const DEFAULT_TIMEOUT_MS = 5_000;
const UNDEFINED_TABLE = '42P01';
const LOCK_NOT_AVAILABLE = '55P03';

function isPool(db: object): db is pg.Pool {
  return typeof (db as { totalCount?: unknown }).totalCount === 'number' && typeof (db as { connect?: unknown }).connect === 'function';
}

/**
 * Runs `write` in ONE PostgreSQL transaction that also checks and records the fencing token for
 * `resource`: the write commits only if `token` is newer than every token a guarded write of that
 * resource has committed with (or equal, with `acceptSameToken`), and the new highest token commits
 * with it. Otherwise nothing of it commits and the call rejects with a `LOCK_STALE_TOKEN` LockError.
 *
 * The check comes first: an upsert of the resource's fence row
 * (`INSERT … ON CONFLICT DO UPDATE … WHERE token < $token RETURNING`) that takes the row's lock
 * until the transaction ends. A stale token updates no row and `write` never runs; a current one
 * holds the row, so a newer holder's guarded write waits for this one and then passes. This is the
 * one guard that still works when the holder has not noticed its loss (a GC pause, a stopped VM):
 * its late write arrives with an older token than its successor's and is refused by the database.
 *
 * Give it the database that holds the protected data, never the lock provider's own session.
 * `write` gets the transaction's client: run every statement of the write on it, and do not commit
 * or roll back yourself. If `write` throws, the transaction (fence record included) is rolled back
 * and the error rethrown.
 *
 * @example
 * ```ts
 * await using lock = await locks.acquire(`stock:${sku}`);
 * await guardedWrite(pool, { resource: `stock:${sku}`, token: lock.fencingToken!, signal: lock.signal }, async (tx) => {
 *   await tx.query('UPDATE stock SET units = units - 1 WHERE sku = $1', [sku]);
 * });
 * ```
 *
 * @returns what `write` resolved.
 * @throws LockError `LOCK_INVALID_ARGUMENT` for bad options (before any I/O); `LOCK_STALE_TOKEN`
 *   when the fence refused the token; the signal's reason when it aborted; `LOCK_BACKEND_UNAVAILABLE`
 *   when a statement of the helper failed or ran out of time (nothing was committed unless COMMIT
 *   itself went unanswered); whatever `write` threw.
 */
export async function guardedWrite<T>(db: GuardedWriteDatabase, options: GuardedWriteOptions, write: (tx: pg.ClientBase) => Promise<T>): Promise<T> {
  const settings = validateGuardedWrite(db, options, write);
  settings.signal?.throwIfAborted();
  if (isPool(db)) {
    const checkout = db.connect();
    let client: pg.PoolClient;
    try {
      client = await withRequestTimeout(checkout, settings.timeoutMs, 'checking a client out of the pg.Pool for a guarded write');
    } catch (error) {
      void checkout.then((late) => late.release(), () => undefined);
      throw backendUnavailableError('a guarded write could not get a connection from its pg.Pool', error);
    }
    const state = { broken: false };
    try {
      return await inTransaction(client, settings, write, state);
    } finally {
      // A connection whose transaction state is unknown must not go back to the pool.
      client.release(state.broken ? new Error('guarded write left the connection in an unknown state') : undefined);
    }
  }
  return inTransaction(db, settings, write, { broken: false });
}

interface GuardSettings {
  readonly resource: string;
  readonly token: bigint;
  readonly signal: AbortSignal | undefined;
  readonly table: string;
  readonly check: string;
  readonly highest: string;
  readonly create: string;
  readonly timeoutMs: number;
}

function validateGuardedWrite(db: unknown, given: GuardedWriteOptions, write: unknown): GuardSettings {
  if (typeof db !== 'object' || db === null || typeof (db as { query?: unknown }).query !== 'function') {
    throw new LockTypeError('db', 'guardedWrite needs a pg.Pool, pg.Client or pg.PoolClient as its first argument');
  }
  if (typeof write !== 'function') throw new LockTypeError('write', 'guardedWrite needs the write as a function (tx) => Promise');
  const options = readAdapterOptions(given, KNOWN_OPTIONS);
  const resource = validateKey(options.resource, 'options.resource');
  if (typeof options.token !== 'bigint') {
    throw new LockTypeError('options.token', 'options.token must be a bigint fencing token; a lock from a provider with fencing "none" has none and cannot guard a write');
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new LockTypeError('options.signal', 'options.signal must be an AbortSignal');
  if (options.acceptSameToken !== undefined && typeof options.acceptSameToken !== 'boolean') {
    throw new LockTypeError('options.acceptSameToken', 'options.acceptSameToken must be a boolean');
  }
  const table = options.table ?? DEFAULT_FENCES_TABLE;
  if (typeof table !== 'string') throw new LockTypeError('options.table', 'options.table must be a string');
  if (!isTableName(table)) throw new LockRangeError('options.table', `options.table must be "table" or "schema.table" of plain identifiers (letters, digits, _), got "${table}"`);
  const timeoutMs = validateDurationMs(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'options.timeoutMs', 1);
  const t = quoteIdentifier(table);
  const accepts = options.acceptSameToken === true ? '<=' : '<';
  return {
    resource,
    token: options.token,
    signal: options.signal,
    table,
    // Numeric, not bigint: a token is any bigint (Redis tokens reach 10^18, others may grow past int64).
    check: `INSERT INTO ${t} AS f (resource, token) VALUES ($1, $2::numeric)
ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE f.token ${accepts} EXCLUDED.token
RETURNING token::text AS token`,
    highest: `SELECT token::text AS token FROM ${t} WHERE resource = $1`,
    create: `CREATE TABLE IF NOT EXISTS ${t} (resource text PRIMARY KEY, token numeric NOT NULL)`,
    timeoutMs,
  };
}

async function inTransaction<T>(client: pg.ClientBase, settings: GuardSettings, write: (tx: pg.ClientBase) => Promise<T>, state: { broken: boolean }): Promise<T> {
  const { resource, token, signal, timeoutMs } = settings;
  const bounded = <R extends pg.QueryResultRow>(text: string, values: unknown[], what: string): Promise<R[]> =>
    withRequestTimeout(client.query<R>(text, values), timeoutMs, what).then((result) => result.rows);
  const fail = (what: string, error: unknown): LockError => {
    // No SQLSTATE: unanswered or disconnected, so the transaction's state on this connection is unknown.
    if (sqlState(error) === undefined) state.broken = true;
    return error instanceof LockError ? error : backendUnavailableError(`guarded write to "${resource}": ${what} failed`, error, resource);
  };
  const rollback = async (): Promise<void> => {
    // Best effort and bounded: the server rolls back an unfinished transaction when the connection ends.
    await withRequestTimeout(client.query('ROLLBACK'), timeoutMs, 'ROLLBACK of a guarded write').catch(() => {
      state.broken = true;
    });
  };
  // At most two rounds: the second only after creating a missing fence table.
  for (let round = 0; round < 2; round += 1) {
    try {
      await bounded('BEGIN', [], 'BEGIN of a guarded write');
      // The wait for a fence row held by another guarded write is bounded too (it ends when that commits).
      await bounded("SELECT set_config('lock_timeout', $1, true)", [`${timeoutMs}ms`], 'bounding the fence wait');
    } catch (error) {
      throw fail('BEGIN', error);
    }
    let accepted: { token: string }[];
    try {
      accepted = await bounded<{ token: string }>(settings.check, [resource, token.toString()], `checking the fencing token of "${resource}"`);
    } catch (error) {
      await rollback();
      if (sqlState(error) === UNDEFINED_TABLE && round === 0) {
        await createTable(bounded, settings);
        continue;
      }
      if (sqlState(error) === LOCK_NOT_AVAILABLE) {
        throw fail(`waiting ${timeoutMs} ms for the fence row (another guarded write of it did not finish)`, error);
      }
      throw fail('the fence check', error);
    }
    if (accepted.length === 0) {
      let highest: string | undefined;
      try {
        [highest] = (await bounded<{ token: string }>(settings.highest, [resource], 'reading the highest token')).map((row) => row.token);
      } finally {
        await rollback();
      }
      throw new LockError(
        LockErrorCode.STALE_TOKEN,
        `guarded write to "${resource}" refused: token ${token} is ${highest === token.toString() ? 'the one of an accepted write already' : `older than ${highest ?? 'the recorded one'}`}; nothing was written`,
        { key: resource },
      );
    }
    let result: T;
    try {
      result = await write(client);
      // Known lost while writing: roll back rather than commit (the fence would still accept it).
      signal?.throwIfAborted();
    } catch (error) {
      await rollback();
      throw error;
    }
    try {
      await bounded('COMMIT', [], 'COMMIT of a guarded write');
    } catch (error) {
      throw fail('COMMIT (its outcome is unknown)', error);
    }
    return result;
  }
  throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `guarded write to "${resource}": the fence table ${settings.table} is still missing after creating it`, { key: resource });
}

async function createTable(bounded: <R extends pg.QueryResultRow>(text: string, values: unknown[], what: string) => Promise<R[]>, settings: GuardSettings): Promise<void> {
  try {
    await bounded(settings.create, [], 'creating the fence table');
  } catch (error) {
    if (!isCreateRace(error)) throw backendUnavailableError(`creating the fence table ${settings.table} failed`, error, settings.resource);
  }
}
