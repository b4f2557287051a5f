/**
 * Every SQL statement the adapter sends, built once per provider around its (validated, quoted)
 * token table name. Each lock operation is one statement, so one round trip.
 */

/** The default name of the table that keeps the fencing counters. */
export const DEFAULT_TABLE = 'fencelock_tokens';

// Plain identifiers only (optionally schema-qualified): they are quoted, never interpolated raw.
// The table part leaves room for the `_holders` and `_semhold` suffixes within PostgreSQL's 63-byte names.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
const TABLE_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,54}$/;

/** Whether `name` is `table` or `schema.table` made of plain identifiers. */
export function isTableName(name: string): boolean {
  const parts = name.split('.');
  return parts.length <= 2 && parts.every((part, i) => (i === parts.length - 1 ? TABLE_IDENTIFIER : IDENTIFIER).test(part));
}

/** Quotes a channel or table name for SQL (`"a"."b"`). */
export function quoteIdentifier(name: string): string {
  return name
    .split('.')
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join('.');
}

/** The lock modes a statement is built for: `exclusive` (`pg_advisory_lock`) or `shared` (`pg_advisory_lock_shared`). */
export type AdvisoryMode = 'exclusive' | 'shared';

/** The statements of one lock mode. */
export interface ModeStatements {
  /**
   * `$1` lock id, `$2` owner id, `$3` session identity, `$4` metadata (bytea or null). One row:
   * `granted`, `token` (text, null unless granted), `pid`. The counter is bumped and the holder
   * recorded in the same statement, and only when the lock was granted.
   */
  readonly acquire: string;
  /**
   * `$1` lock id, `$2` channel, `$3` payload, `$4` owner id. One row: `released`; forgets the holder
   * row and notifies waiters when released.
   */
  readonly release: string;
  /** `$1` lock id: one row, `released` (no notification: for clean-ups of uncertain attempts). */
  readonly unlock: string;
}

/** The statements of the elections: the exclusive mutex whose grant notifies too, and the leader's read. */
export interface ElectionStatements extends ModeStatements {
  /**
   * As the exclusive `acquire`, with `$5` channel and `$6` payload: a grant also notifies, in the
   * same statement, so that watchers hear a new leader take over (not only the old one leave).
   */
  readonly acquire: string;
  /**
   * `$1` election id, `$2` classid, `$3` objid: the leader, one row (`token`, `metadata`) or none.
   * Only a holder row whose own session holds the election's advisory lock now counts: a row left by
   * a session that ended reads as nobody.
   */
  readonly leader: string;
}

/** The statements of one provider. */
export interface Statements {
  /** `$1`, `$2`: the token and holder table names as text, for `to_regclass`. One row: `present`. */
  readonly tablesExist: string;
  /** Each creates one table if it is missing. */
  readonly createTables: readonly string[];
  /** The server session's identity: its pid and start time in µs (a pid alone is reused). */
  readonly identity: string;
  /** The keepalive: one row, `pid`. */
  readonly keepalive: string;
  readonly exclusive: ModeStatements;
  readonly shared: ModeStatements;
  /** `$1` owner id, `$2` lock id: forgets a holder row an uncertain attempt may have left. */
  readonly forget: string;
  /**
   * `$1` lock id, `$2` classid, `$3` objid: one row per (session holding it, mode, holder of ours
   * recorded for that session and mode), or one row with a null owner for a foreign session.
   */
  readonly inspect: string;
  readonly election: ElectionStatements;
}

/** The holder table kept beside the token table `table`: `<table>_holders`, in the same schema. */
export function holdersTableName(table: string): string {
  return `${table}_holders`;
}

/** A session identity as sessionIdentity writes it, in SQL (null, so matching nothing, without a start time). */
export const IDENTITY_SQL = (pid: string, started: string): string => `${pid}::text || '@' || (extract(epoch FROM ${started}) * 1000000)::bigint::text`;

function modeStatements(mode: AdvisoryMode, tokens: string, holders: string, notifyGrant = false): ModeStatements {
  const suffix = mode === 'shared' ? '_shared' : '';
  // An exclusive grant proves every recorded holder of the id stale (their sessions no longer hold
  // it, or it could not be granted); a shared grant proves only the recorded exclusive ones stale.
  // Stale shared rows of dead sessions are ignored by inspect (no live session matches them) and
  // removed by the next exclusive grant.
  const stale = mode === 'exclusive' ? '' : " AND h.mode = 'exclusive'";
  return {
    acquire: `WITH attempt AS (SELECT pg_try_advisory_lock${suffix}($1::bigint) AS granted),
bump AS (
  INSERT INTO ${tokens} AS t (lock_id, token)
  SELECT $1::bigint, 1 FROM attempt WHERE granted
  ON CONFLICT (lock_id) DO UPDATE SET token = t.token + 1
  RETURNING token
),
stale AS (DELETE FROM ${holders} h WHERE h.lock_id = $1::bigint AND EXISTS (SELECT 1 FROM bump)${stale}),
hold AS (
  INSERT INTO ${holders} (lock_id, owner_id, holder_session, mode, token, metadata)
  SELECT $1::bigint, $2, $3, '${mode}', token, $4::bytea FROM bump
)
SELECT attempt.granted, (SELECT token FROM bump)::text AS token, pg_backend_pid() AS pid${notifyGrant ? ',\n  CASE WHEN EXISTS (SELECT 1 FROM bump) THEN pg_notify($5, $6) END AS notified' : ''} FROM attempt`,
    // A CTE (never inlined: the function is volatile) so that the unlock runs exactly once.
    release: `WITH r AS (SELECT pg_advisory_unlock${suffix}($1::bigint) AS released),
d AS (DELETE FROM ${holders} WHERE lock_id = $1::bigint AND owner_id = $4)
SELECT released, CASE WHEN released THEN pg_notify($2, $3) END AS notified FROM r`,
    unlock: `SELECT pg_advisory_unlock${suffix}($1::bigint) AS released`,
  };
}

/** Builds the statements for the token table `table` (validated with {@link isTableName}). */
export function statements(table: string): Statements {
  const t = quoteIdentifier(table);
  const h = quoteIdentifier(holdersTableName(table));
  return {
    tablesExist: 'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS present',
    createTables: [
      `CREATE TABLE IF NOT EXISTS ${t} (
  lock_id bigint PRIMARY KEY,
  token bigint NOT NULL
)`,
      // Who holds what, for inspect: shared locks have several holders, and a session's pid alone
      // does not name the owner. Rows are only trusted while their session holds the lock.
      `CREATE TABLE IF NOT EXISTS ${h} (
  lock_id bigint NOT NULL,
  owner_id text NOT NULL,
  holder_session text NOT NULL,
  mode text NOT NULL,
  token bigint NOT NULL,
  metadata bytea,
  PRIMARY KEY (lock_id, owner_id)
)`,
    ],
    identity:
      'SELECT pg_backend_pid() AS pid, (extract(epoch FROM backend_start) * 1000000)::bigint::text AS started ' +
      'FROM pg_stat_activity WHERE pid = pg_backend_pid()',
    keepalive: 'SELECT pg_backend_pid() AS pid',
    exclusive: modeStatements('exclusive', t, h),
    shared: modeStatements('shared', t, h),
    forget: `DELETE FROM ${h} WHERE owner_id = $1 AND lock_id = $2::bigint`,
    inspect: `SELECT l.pid, CASE WHEN l.mode = 'ShareLock' THEN 'shared' ELSE 'exclusive' END AS mode,
  h.owner_id, h.token::text AS token, h.metadata
FROM pg_locks l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
LEFT JOIN ${h} h ON h.lock_id = $1::bigint
  AND h.holder_session = ${IDENTITY_SQL('l.pid', 'a.backend_start')}
  AND h.mode = CASE WHEN l.mode = 'ShareLock' THEN 'shared' ELSE 'exclusive' END
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = $2::oid AND l.objid = $3::oid
ORDER BY l.pid, h.owner_id`,
    election: {
      ...modeStatements('exclusive', t, h, true),
      leader: `SELECT h.token::text AS token, h.metadata
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
JOIN ${h} h ON h.lock_id = $1::bigint AND h.mode = 'exclusive'
  AND h.holder_session = ${IDENTITY_SQL('l.pid', 'a.backend_start')}
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.mode = 'ExclusiveLock'
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = $2::oid AND l.objid = $3::oid
ORDER BY h.token DESC
LIMIT 1`,
    },
  };
}

/** A server session's identity as stored in the token table (`<pid>@<start µs>`). */
export function sessionIdentity(pid: number, started: string | null): string {
  return `${pid}@${started ?? '?'}`;
}
