/**
 * The statements of the counting semaphores (see postgres-semaphores.ts for the design), built once
 * per provider around its token table's name: two tables beside it and a session-local function.
 */
import { IDENTITY_SQL, quoteIdentifier } from './sql.js';

/** The table of semaphores (`<table>_sem`): one row per semaphore id, its counter and last limit. */
export function semaphoreTableName(table: string): string {
  return `${table}_sem`;
}

/** The table of semaphore holders (`<table>_semhold`), read by inspect. */
export function semaphoreHoldersTableName(table: string): string {
  return `${table}_semhold`;
}

/** The session-local (`pg_temp`) function that takes permits: created on a session's first semaphore call. */
export const ACQUIRE_FUNCTION = 'pg_temp.fencelock_semaphore_acquire';

/** The semaphore statements of one provider. */
export interface SemaphoreStatements {
  /** `$1`, `$2`: the two table names as text. One row: `present`. */
  readonly tablesExist: string;
  /** Each creates one table if it is missing. */
  readonly createTables: readonly string[];
  /** (Re)creates {@link ACQUIRE_FUNCTION} in the session's temporary schema. */
  readonly createFunction: string;
  /**
   * `$1` semaphore id, `$2` key1, `$3` key2, `$4` classid, `$5` objid base, `$6` limit, `$7` permits,
   * `$8` owner id, `$9` session identity, `$10` metadata (bytea or null), `$11` row-lock wait (ms).
   * One row: `outcome` (`granted`, `held` or `limit`), `value` (the token, or the stored limit),
   * `slots` (granted slots), `pid`.
   */
  readonly acquire: string;
  /**
   * `$1` key1, `$2` key2, `$3` slots (int[]), `$4` semaphore id, `$5` owner id, `$6` channel,
   * `$7` payload. One row: `released` (every slot was held), and the notification when released.
   */
  readonly release: string;
  /**
   * `$1` semaphore id, `$2` classid, `$3` objid base. One row per holder: a recorded holder whose
   * session still holds its slots, or a foreign session holding slots (owner null).
   */
  readonly inspect: string;
  /**
   * `$1` key1s, `$2` key2s, `$3` classids, `$4` objid bases (arrays, one entry per semaphore): unlocks
   * every slot of them this session holds; then the function is dropped (a handed client's clean-up).
   */
  readonly cleanUp: { readonly unlockSlots: string; readonly dropFunction: string };
}

// Rows of pg_locks that are slots of the semaphore whose classid is `classid` and whose slot 0 shows
// as objid `base` (unsigned), in this database.
const SLOTS_OF = (l: string, classid: string, base: string): string => `${l}.locktype = 'advisory' AND ${l}.granted AND ${l}.objsubid = 2
    AND ${l}.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND ${l}.classid = ${classid}::oid AND ${l}.objid::bigint BETWEEN ${base}::bigint AND ${base}::bigint + 1023`;

/** Builds the semaphore statements for the token table `table` (validated with `isTableName`). */
export function semaphoreStatements(table: string): SemaphoreStatements {
  const s = quoteIdentifier(semaphoreTableName(table));
  const h = quoteIdentifier(semaphoreHoldersTableName(table));
  return {
    tablesExist: 'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS present',
    createTables: [
      `CREATE TABLE IF NOT EXISTS ${s} (
  semaphore_id bigint PRIMARY KEY,
  token bigint NOT NULL,
  semaphore_limit integer NOT NULL
)`,
      `CREATE TABLE IF NOT EXISTS ${h} (
  semaphore_id bigint NOT NULL,
  owner_id text NOT NULL,
  holder_session text NOT NULL,
  slots integer[] NOT NULL,
  token bigint NOT NULL,
  metadata bytea,
  PRIMARY KEY (semaphore_id, owner_id)
)`,
    ],
    // PL/pgSQL for its order: each step below runs after the one before, in one statement (one
    // round trip, one transaction that no client pause can hold open).
    createFunction: `CREATE OR REPLACE FUNCTION ${ACQUIRE_FUNCTION}(
  p_id bigint, p_key1 integer, p_key2 integer, p_classid text, p_base text, p_limit integer, p_permits integer,
  p_owner text, p_session text, p_metadata bytea, p_wait_ms integer)
RETURNS TABLE (outcome text, value text, slots integer[], pid integer)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_saved text := current_setting('lock_timeout');
  v_stored integer;
  v_live integer;
  v_mine integer[];
  v_taken integer[] := '{}';
  v_token bigint;
BEGIN
  -- 1. Every acquirer of this semaphore queues on its row: the check, the tries and the bump below
  --    are one step to the others (bounded: a row held elsewhere longer is "busy", tried again later).
  PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);
  BEGIN
    -- A new row has limit 0: no grant yet, so no limit to agree with.
    INSERT INTO ${s} (semaphore_id, token, semaphore_limit) VALUES (p_id, 0, 0) ON CONFLICT (semaphore_id) DO NOTHING;
    SELECT t.semaphore_limit INTO v_stored FROM ${s} t WHERE t.semaphore_id = p_id FOR UPDATE;
  EXCEPTION WHEN lock_not_available THEN
    RETURN QUERY SELECT 'held'::text, NULL::text, NULL::integer[], pg_backend_pid();
    RETURN;
  END;
  PERFORM set_config('lock_timeout', v_saved, true);
  -- 2. The slots held now, by any session (the lock manager's truth, not a row): the stored limit
  --    binds while anyone holds; this session's own slots are skipped below (advisory locks are
  --    re-entrant within a session).
  SELECT count(*)::integer, coalesce(array_agg((l.objid::bigint - p_base::bigint)::integer) FILTER (WHERE l.pid = pg_backend_pid()), '{}')
    INTO v_live, v_mine
    FROM pg_locks l WHERE ${SLOTS_OF('l', 'p_classid', 'p_base')};
  IF v_live > 0 AND v_stored <> 0 AND v_stored <> p_limit THEN
    RETURN QUERY SELECT 'limit'::text, v_stored::text, NULL::integer[], pg_backend_pid();
    RETURN;
  END IF;
  -- 3. Free slots below the limit, all the permits or none.
  BEGIN
    FOR v_slot IN 0 .. p_limit - 1 LOOP
      EXIT WHEN cardinality(v_taken) = p_permits;
      CONTINUE WHEN v_slot = ANY (v_mine);
      IF pg_try_advisory_lock(p_key1, p_key2 + v_slot) THEN v_taken := v_taken || v_slot; END IF;
    END LOOP;
    IF cardinality(v_taken) < p_permits THEN
      PERFORM pg_advisory_unlock(p_key1, p_key2 + t) FROM unnest(v_taken) AS t;
      RETURN QUERY SELECT 'held'::text, NULL::text, NULL::integer[], pg_backend_pid();
      RETURN;
    END IF;
    -- 4. Granted: the counter and the limit move with the grant. Holder rows whose first slot nobody
    --    holds are forgotten (their sessions ended); inspect trusts a row only while its own session
    --    holds that slot, so a row left a little longer shows nothing.
    UPDATE ${s} t SET token = t.token + 1, semaphore_limit = p_limit WHERE t.semaphore_id = p_id RETURNING t.token INTO v_token;
    DELETE FROM ${h} o WHERE o.semaphore_id = p_id AND (o.owner_id = p_owner OR NOT EXISTS (
      SELECT 1 FROM pg_locks l WHERE ${SLOTS_OF('l', 'p_classid', 'p_base')} AND l.objid::bigint = p_base::bigint + o.slots[1]));
    INSERT INTO ${h} (semaphore_id, owner_id, holder_session, slots, token, metadata) VALUES (p_id, p_owner, p_session, v_taken, v_token, p_metadata);
  EXCEPTION WHEN OTHERS THEN
    -- A session lock outlives the rollback: give back what this call took before failing.
    PERFORM pg_advisory_unlock(p_key1, p_key2 + t) FROM unnest(v_taken) AS t;
    RAISE;
  END;
  RETURN QUERY SELECT 'granted'::text, v_token::text, v_taken, pg_backend_pid();
END
$fn$`,
    acquire: `SELECT outcome, value, slots, pid FROM ${ACQUIRE_FUNCTION}($1::bigint, $2::integer, $3::integer, $4::text, $5::text, $6::integer, $7::integer, $8::text, $9::text, $10::bytea, $11::integer)`,
    // CTEs (never inlined: the functions are volatile), so that each unlock runs exactly once.
    release: `WITH u AS (SELECT coalesce(bool_and(pg_advisory_unlock($1::integer, $2::integer + t)), false) AS released FROM unnest($3::integer[]) AS t),
d AS (DELETE FROM ${h} WHERE semaphore_id = $4::bigint AND owner_id = $5 AND slots = $3::integer[])
SELECT released, CASE WHEN released THEN pg_notify($6, $7) END AS notified FROM u`,
    inspect: `WITH slot AS (
  SELECT l.pid, (l.objid::bigint - $3::bigint)::integer AS n, ${IDENTITY_SQL('l.pid', 'a.backend_start')} AS holder_session
  FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE ${SLOTS_OF('l', '$2', '$3')}
),
recorded AS (
  SELECT h.owner_id, cardinality(h.slots) AS permits, h.token, h.metadata, h.slots, h.holder_session FROM ${h} h
  WHERE h.semaphore_id = $1::bigint AND EXISTS (SELECT 1 FROM slot WHERE slot.holder_session = h.holder_session AND slot.n = h.slots[1])
)
SELECT owner_id, permits, token::text AS token, metadata, NULL::integer AS pid,
  NULLIF((SELECT semaphore_limit FROM ${s} WHERE semaphore_id = $1::bigint), 0) AS semaphore_limit FROM recorded
UNION ALL
SELECT NULL, count(*)::integer, NULL, NULL, slot.pid, NULLIF((SELECT semaphore_limit FROM ${s} WHERE semaphore_id = $1::bigint), 0)
FROM slot WHERE NOT EXISTS (SELECT 1 FROM recorded r WHERE r.holder_session = slot.holder_session AND slot.n = ANY (r.slots))
GROUP BY slot.pid
ORDER BY 1 NULLS LAST, 5`,
    cleanUp: {
      unlockSlots: `SELECT count(pg_advisory_unlock(t.key1, t.key2 + (l.objid::bigint - t.base)::integer)) AS unlocked
FROM unnest($1::integer[], $2::integer[], $3::bigint[], $4::bigint[]) AS t(key1, key2, classid, base)
JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.pid = pg_backend_pid()
  AND l.classid::bigint = t.classid AND l.objid::bigint BETWEEN t.base AND t.base + 1023`,
      dropFunction: `DROP FUNCTION IF EXISTS ${ACQUIRE_FUNCTION}`,
    },
  };
}
