/**
 * Counting semaphores on PostgreSQL, in the adapter's own terms: session advisory locks held by the
 * provider's one dedicated session, a durable per-key counter for fencing, LISTEN/NOTIFY wake-ups.
 *
 * A semaphore key has up to 1024 slots, each a two-int4 advisory lock (see semaphore-id.ts); a
 * holder of `permits` permits holds that many slots below the limit. Why this is safe:
 * - **At most `limit` permits.** A slot is an exclusive advisory lock, so each is held by at most
 *   one session; within our session (advisory locks are re-entrant there) the acquiring function
 *   skips the slots the session already holds, read from `pg_locks`. Holders agreeing on `limit`
 *   only ever take slots `0 … limit-1`, so their permits add up to at most `limit`.
 * - **One agreed limit.** The semaphore's row (`<table>_sem`) keeps the limit of its last grant.
 *   Every acquirer first locks that row (`SELECT … FOR UPDATE`), so acquirers of a key take turns;
 *   under the row lock it counts the slots held by any session in `pg_locks` (the lock manager's
 *   truth: a holder whose session died holds nothing), and while any is held a different limit is
 *   refused (`LOCK_LIMIT_MISMATCH`) before a slot is tried. Every grant writes its limit, so the row
 *   holds the limit of every live holder; a row made by an attempt that granted nothing has limit 0,
 *   which binds nobody (slots held then are another program's two-int4 locks, not holders of ours).
 * - **All or none.** The function tries free slots in order and, when it found fewer than
 *   `permits`, unlocks the ones it took before it returns. Other acquirers of the key wait on the
 *   row meanwhile, so none of them ever sees such a passing hold; releases never wait for it (they
 *   only free slots). An error after a slot was taken (a refused insert) unlocks it too: a session
 *   lock outlives the rollback, so the function gives it back itself.
 * - **Tokens.** The row's counter is bumped in the granting statement, under the row lock, and
 *   committed before the reply: strictly increasing per key, across holders, crashes and restarts,
 *   like the locks' counters (`fencing: 'per-key'`).
 * - **Loss.** Slots are session locks: they go with the session, exactly as locks do. A grant joins
 *   the session like a lock, so its handle hears `LOCK_LOST` the moment the session is known ended
 *   (`pg_terminate_backend`, a reset, a silent socket past the session TTL), and the server frees
 *   the slots at that moment for others.
 *
 * One statement per attempt (the function, defined in the session's temporary schema on its first
 * semaphore call) and one per release, which unlocks the slots and notifies the channel with
 * `semaphore:<id>`. Waiters wake on that notice and otherwise poll with core's backoff (a session
 * that died sends none). Waiting is not FIFO between processes, as for the provider's locks.
 */
import {
  type BackendGrant,
  type BackendSemaphoreRequest,
  type RetryOptions,
  type SemaphoreInfo,
  limitMismatchError,
  monotonicNow,
  retryableFailure,
  waitForGrant,
} from '@fencelock/core/adapter';
import { type LockIdFunction, checkedLockId } from './lock-id.js';
import { type PgSession, connectionBroken } from './pg-session.js';
import { postgresFailure } from './refusals.js';
import type { ReleaseNotifier } from './release-notifier.js';
import { type SemaphoreLockIds, checkedSemaphoreLimit, semaphoreLockIds } from './semaphore-id.js';
import type { SemaphoreStatements } from './semaphore-sql.js';
import { sessionGrant } from './session-grant.js';

/** What the semaphores need of the backend. */
export interface PostgresSemaphoreSettings {
  readonly statements: SemaphoreStatements;
  readonly channel: string;
  readonly lockId: LockIdFunction;
  readonly requestTimeoutMs: number;
  readonly retry: Partial<RetryOptions>;
  /** The backend's session for a call made at `since` (see `PostgresBackend`). */
  readonly sessionFor: (since: number) => Promise<PgSession>;
  readonly notifier: ReleaseNotifier;
}

interface AcquireRow {
  readonly outcome: 'granted' | 'held' | 'limit';
  readonly value: string | null;
  readonly slots: number[] | null;
  readonly pid: number;
}

interface InspectRow {
  readonly owner_id: string | null;
  readonly permits: number;
  readonly token: string | null;
  readonly metadata: Buffer | null;
  readonly pid: number | null;
  readonly semaphore_limit: number | null;
}

// SQLSTATE of a table that does not exist: no semaphore was ever taken with this token table.
const UNDEFINED_TABLE = '42P01';

/** The release notice's payload for semaphore `ids` (lock ids are plain numbers: never the same). */
function noticePayload(ids: SemaphoreLockIds): string {
  return `semaphore:${ids.semaphoreId}`;
}

/** The counting semaphores of `@fencelock/postgres` (see the module comment). */
export class PostgresSemaphores {
  readonly #settings: PostgresSemaphoreSettings;
  // Per session, the semaphore ids with an attempt whose outcome is not known yet (see #undo): a
  // retry waits until it is, so that undoing that attempt cannot take the retry's permits with it.
  readonly #uncertain = new WeakMap<PgSession, Set<string>>();

  constructor(settings: PostgresSemaphoreSettings) {
    this.#settings = settings;
  }

  /** `LockBackend.acquireSemaphore`: tries, then waits until the deadline (notified, or polling). */
  async acquire(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    checkedSemaphoreLimit(request.limit);
    const ids = semaphoreLockIds(checkedLockId(this.#settings.lockId, request.key));
    const since = monotonicNow();
    return waitForGrant(request, () => this.#attempt(request, ids, since), {
      retry: this.#settings.retry,
      wakeup: () => this.#settings.notifier.wakeup(noticePayload(ids)),
      retryFailed: retryableFailure,
    });
  }

  /** `LockBackend.inspectSemaphore`: the holders whose sessions hold their slots, and foreign sessions. */
  async inspect(key: string): Promise<SemaphoreInfo | undefined> {
    const ids = semaphoreLockIds(checkedLockId(this.#settings.lockId, key));
    const session = await this.#settings.sessionFor(monotonicNow());
    let rows: InspectRow[];
    try {
      rows = await session.query<InspectRow>(this.#settings.statements.inspect, [ids.semaphoreId.toString(), ids.classid, ids.objidBase], `inspecting semaphore "${key}"`);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === UNDEFINED_TABLE) return undefined;
      throw postgresFailure(`inspecting semaphore "${key}"`, error, key);
    }
    if (rows.length === 0) return undefined;
    const holders = rows.map((row) => ({
      // A session holding slots without a holder row of ours is another program's, named by its process.
      ownerId: row.owner_id ?? `postgres-pid:${row.pid ?? '?'}`,
      mode: 'semaphore' as const,
      permits: row.permits,
      fencingToken: row.token === null ? undefined : BigInt(row.token),
      remainingMs: undefined,
      metadata: row.metadata === null ? undefined : row.metadata.toString('utf8'),
    }));
    const limit = rows.find((row) => row.semaphore_limit !== null)?.semaphore_limit ?? holders.reduce((sum, holder) => sum + holder.permits, 0);
    return { key, limit, holders };
  }

  /** One call of the acquiring function: a grant, `undefined` while the permits do not fit. */
  async #attempt(request: BackendSemaphoreRequest, ids: SemaphoreLockIds, since: number, reconnect = true): Promise<BackendGrant | undefined> {
    const session = await this.#settings.sessionFor(since);
    const what = `acquiring semaphore "${request.key}"`;
    // A session opened before this call whose connection was already broken: give it up and try
    // once on a new one, as the locks do (whatever the old session took ends with it).
    const retried = (error: unknown): Promise<BackendGrant | undefined> | undefined => {
      if (!reconnect || !connectionBroken(error) || session.openedAt >= since) return undefined;
      session.lose();
      return this.#attempt(request, ids, since, false);
    };
    try {
      await session.prepareSemaphores();
    } catch (error) {
      const again = retried(error);
      if (again !== undefined) return again;
      throw postgresFailure(what, error, request.key);
    }
    if (this.#uncertain.get(session)?.has(ids.semaphoreId.toString()) === true) return undefined;
    session.touchSemaphore(ids);
    const metadata = request.metadata === undefined ? null : Buffer.from(request.metadata, 'utf8');
    // The row lock is waited for at most a third of the request bound: longer, the key is "busy".
    const rowWaitMs = Math.max(1, Math.floor(this.#settings.requestTimeoutMs / 3));
    const values = [ids.semaphoreId.toString(), ids.key1, ids.key2, ids.classid, ids.objidBase, request.limit, request.permits, request.ownerId, session.identity, metadata, rowWaitMs];
    const sent = session.queryWithOutcome<AcquireRow>(this.#settings.statements.acquire, values, what);
    let row: AcquireRow | undefined;
    try {
      [row] = await sent.answer;
      session.checkPid(row?.pid);
    } catch (error) {
      this.#undo(session, ids, request.ownerId, sent.outcome);
      const again = retried(error);
      if (again !== undefined) return again;
      throw postgresFailure(what, error, request.key);
    }
    if (row?.outcome === 'limit') throw limitMismatchError(request.key, Number(row.value), request.limit);
    if (row?.outcome !== 'granted' || row.value === null || row.slots === null) return undefined;
    return this.#grant(request, session, ids, BigInt(row.value), row.slots);
  }

  /**
   * Undoes an attempt whose answer did not come in time (the statement still runs, later) by its
   * real outcome: slots it was granted are released. A failed call took nothing (the function gives
   * back what it took before raising). Unanswered: the session is given up, so the server frees them.
   */
  #undo(session: PgSession, ids: SemaphoreLockIds, ownerId: string, outcome: Promise<AcquireRow[]>): void {
    const id = ids.semaphoreId.toString();
    let uncertain = this.#uncertain.get(session);
    if (uncertain === undefined) this.#uncertain.set(session, (uncertain = new Set()));
    uncertain.add(id);
    outcome
      .then(
        async ([row]) => {
          if (row?.outcome === 'granted' && row.slots !== null) await this.#release(session, ids, ownerId, row.slots, 'undoing an uncertain semaphore acquire');
        },
        () => undefined,
      )
      .then(undefined, () => session.lose())
      .finally(() => uncertain.delete(id));
  }

  /** Unlocks `slots` and forgets the holder row; notifies waiters when every slot was held. */
  async #release(session: PgSession, ids: SemaphoreLockIds, ownerId: string, slots: readonly number[], what: string): Promise<boolean> {
    const { statements, channel } = this.#settings;
    const [row] = await session.query<{ released: boolean }>(
      statements.release,
      [ids.key1, ids.key2, slots, ids.semaphoreId.toString(), ownerId, channel, noticePayload(ids)],
      what,
    );
    return row?.released === true;
  }

  // The slots are the session's: they end with it, as the provider's locks do.
  #grant(request: BackendSemaphoreRequest, session: PgSession, ids: SemaphoreLockIds, token: bigint, slots: readonly number[]): BackendGrant {
    const { key, ownerId } = request;
    return sessionGrant({
      key,
      kind: 'semaphore',
      observer: request.observer,
      session,
      token,
      releaseOnce: () => this.#release(session, ids, ownerId, slots, `releasing semaphore "${key}"`),
    });
  }
}
