/**
 * Every SQL statement the adapter sends, built once per provider around its (validated, quoted)
 * token table name. Each lock operation is one statement, so one round trip.
 */

/** The default name of the table that keeps the fencing counters. */
export const DEFAULT_TABLE = 'fencelock_tokens';

// Plain identifiers only (optionally schema-qualified): they are quoted, never interpolated raw.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** Whether `name` is `table` or `schema.table` made of plain identifiers. */
export function isTableName(name: string): boolean {
  const parts = name.split('.');
  return parts.length <= 2 && parts.every((part) => IDENTIFIER.test(part));
}

/** Quotes a channel or table name for SQL (`"a"."b"`). */
export function quoteIdentifier(name: string): string {
  return name
    .split('.')
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join('.');
}

/** The statements of one provider. */
export interface Statements {
  /** `$1`: the table name as text, for `to_regclass`. Resolves one row: `present`. */
  readonly tableExists: string;
  readonly createTable: string;
  /** The server session's identity: its pid and start time in µs (a pid alone is reused). */
  readonly identity: string;
  /** The keepalive: one row, `pid`. */
  readonly keepalive: string;
  /**
   * `$1` lock id, `$2` owner id, `$3` session identity, `$4` metadata (bytea or null). One row:
   * `granted`, `token` (text, null unless granted), `pid`. The counter is bumped in the same
   * statement, and only when the lock was granted.
   */
  readonly acquire: string;
  /** `$1` lock id, `$2` channel, `$3` payload. One row: `released`; notifies waiters when released. */
  readonly release: string;
  /** `$1` lock id: one row, `released` (no notification: for clean-ups of uncertain attempts). */
  readonly unlock: string;
  /** `$1` lock id, `$2` classid, `$3` objid: one row per session holding it. */
  readonly inspect: string;
}

/** Builds the statements for the token table `table` (validated with {@link isTableName}). */
export function statements(table: string): Statements {
  const t = quoteIdentifier(table);
  return {
    tableExists: 'SELECT to_regclass($1) IS NOT NULL AS present',
    createTable: `CREATE TABLE IF NOT EXISTS ${t} (
  lock_id bigint PRIMARY KEY,
  token bigint NOT NULL,
  owner_id text,
  holder_session text,
  metadata bytea
)`,
    identity:
      'SELECT pg_backend_pid() AS pid, (extract(epoch FROM backend_start) * 1000000)::bigint::text AS started ' +
      'FROM pg_stat_activity WHERE pid = pg_backend_pid()',
    keepalive: 'SELECT pg_backend_pid() AS pid',
    acquire: `WITH attempt AS (SELECT pg_try_advisory_lock($1::bigint) AS granted),
bump AS (
  INSERT INTO ${t} AS t (lock_id, token, owner_id, holder_session, metadata)
  SELECT $1::bigint, 1, $2, $3, $4::bytea FROM attempt WHERE granted
  ON CONFLICT (lock_id) DO UPDATE SET token = t.token + 1, owner_id = EXCLUDED.owner_id,
    holder_session = EXCLUDED.holder_session, metadata = EXCLUDED.metadata
  RETURNING token
)
SELECT attempt.granted, (SELECT token FROM bump)::text AS token, pg_backend_pid() AS pid FROM attempt`,
    // A CTE (never inlined: the function is volatile) so that the unlock runs exactly once.
    release: `WITH r AS (SELECT pg_advisory_unlock($1::bigint) AS released)
SELECT released, CASE WHEN released THEN pg_notify($2, $3) END AS notified FROM r`,
    unlock: 'SELECT pg_advisory_unlock($1::bigint) AS released',
    inspect: `SELECT l.pid, (extract(epoch FROM a.backend_start) * 1000000)::bigint::text AS started,
  t.owner_id, t.holder_session, t.token::text AS token, t.metadata
FROM pg_locks l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
LEFT JOIN ${t} t ON t.lock_id = $1::bigint
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = $2::oid AND l.objid = $3::oid`,
  };
}

/** A server session's identity as stored in the token table (`<pid>@<start µs>`). */
export function sessionIdentity(pid: number, started: string | null): string {
  return `${pid}@${started ?? '?'}`;
}
