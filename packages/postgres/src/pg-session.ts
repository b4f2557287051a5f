import {
  type GrantObserver,
  LockError,
  LockErrorCode,
  SessionKeeper,
  monotonicNow,
  withRequestTimeout,
} from '@fencelock/core/adapter';
import type pg from 'pg';
import type { DedicatedConnection } from './connection-source.js';
import { postgresFailure } from './refusals.js';
import { ensureTables, sqlState } from './sql-state.js';
import type { SemaphoreLockIds } from './semaphore-id.js';
import { type SemaphoreStatements, semaphoreHoldersTableName, semaphoreTableName } from './semaphore-sql.js';
import { type AdvisoryMode, type Statements, holdersTableName, quoteIdentifier, sessionIdentity } from './sql.js';

/** What a session needs from its provider (validated there). */
export interface PgSessionSettings {
  readonly statements: Statements;
  readonly semaphoreStatements: SemaphoreStatements;
  /** The token table's name, as given (for `to_regclass`). */
  readonly table: string;
  /** The LISTEN/NOTIFY channel of release notifications. */
  readonly channel: string;
  /** How long the server keeps a silent session (and so its locks): `idle_session_timeout`, in ms. */
  readonly ttlMs: number;
  readonly requestTimeoutMs: number;
  /** Called with the payload (a lock id) of every release notification on the channel. */
  readonly notified: (payload: string) => void;
}

// SQLSTATEs met while opening a session.
const UNDEFINED_OBJECT = '42704'; // unrecognized configuration parameter (a server before 14)

/**
 * True when `error` says the connection under a statement is gone (reset by a peer or a middlebox,
 * closed), not that the server refused the statement: Node's socket errors, and pg's own errors for
 * a client whose connection failed, which carry no code, only these messages.
 */
export function connectionBroken(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ECONNRESET' || code === 'EPIPE') return true;
  const message = error instanceof Error ? error.message : '';
  return code === undefined && /Connection terminated|is not queryable/.test(message);
}

/**
 * One PostgreSQL server session the provider dedicates to its locks: session advisory locks live
 * exactly as long as it does. It carries the provider's locks, its keepalive and its LISTEN.
 *
 * Core's {@link SessionKeeper} keeps it: a keepalive query a third of the TTL after the last answered
 * request, validity from the send time of the last answered request, and a loss declared by its own
 * deadline when the socket stays silent. The server is told the same TTL (`idle_session_timeout`),
 * so a silent client's session, and with it every lock, is ended by the server too, never before
 * our validity runs out: the idle clock starts after the server answered our last request.
 * The connection's error or end is the locks' end: every lock on the session hears `lost` at once.
 */
export class PgSession {
  /** The server session's identity, `<pid>@<start µs>`, as stored in the token table. */
  readonly identity: string;
  readonly pid: number;
  /** Whether the server enforces the TTL itself (`idle_session_timeout`, PostgreSQL 14 and later). */
  readonly serverExpiry: boolean;
  readonly #connection: DedicatedConnection;
  readonly #settings: PgSessionSettings;
  readonly #keeper: SessionKeeper;
  // Per lock id, how many holds of each mode this server session has or may have (an attempt in
  // flight). Advisory locks are re-entrant per session and a session's own shared and exclusive
  // holds never conflict, so the server would grant a second local owner anything: these counts
  // are what makes one provider's owners exclude each other. PostgreSQL counts re-entrant holds
  // too, so each local hold is one server-side hold, released by its own unlock.
  readonly #holds = new Map<string, { exclusive: number; shared: number }>();
  /** When the session was opened (monotonic ms). */
  readonly openedAt: number;
  readonly #detach: () => void;
  // The semaphores whose slots this session took or may have taken (an attempt in flight), by
  // semaphore id: what a handed client's clean-up unlocks.
  readonly #semaphores = new Map<bigint, SemaphoreLockIds>();
  // Made on the first semaphore call: the semaphore tables checked (or created) and the session's
  // acquire function defined.
  #semaphoresReady: Promise<void> | undefined;
  #closed = false;
  // The statement issued last: pg 8 queues a query issued while another runs, but deprecates it
  // (a warning on the user's stderr; pg 9 refuses it). We keep the queue ourselves, in the same order.
  #previous: Promise<unknown> = Promise.resolve();

  private constructor(
    connection: DedicatedConnection,
    settings: PgSessionSettings,
    identity: { pid: number; started: string | null; serverExpiry: boolean; openedAt: number },
    detach: () => void,
    onEnd: (session: PgSession, error: LockError | undefined) => void,
  ) {
    this.#connection = connection;
    this.#settings = settings;
    this.pid = identity.pid;
    this.openedAt = identity.openedAt;
    this.identity = sessionIdentity(identity.pid, identity.started);
    this.serverExpiry = identity.serverExpiry;
    this.#detach = detach;
    this.#keeper = new SessionKeeper({
      name: `PostgreSQL session ${identity.pid}`,
      ttlMs: settings.ttlMs,
      openedAt: identity.openedAt,
      requestTimeoutMs: settings.requestTimeoutMs,
      keepAlive: async (timeoutMs) => {
        const rows = await this.#send<{ pid: number }>(settings.statements.keepalive, [], 'PostgreSQL keepalive', timeoutMs, false).answer;
        this.#checkPid(rows[0]?.pid);
        return undefined;
      },
      ended: (error) => onEnd(this, error),
    });
  }

  /**
   * Opens a session on `connection`: reads its identity, sets `idle_session_timeout`, LISTENs on the
   * channel and makes sure the token table exists. Each step is bounded; on failure the connection
   * is given back.
   */
  static async open(connection: DedicatedConnection, settings: PgSessionSettings, onEnd: (session: PgSession, error: LockError | undefined) => void): Promise<PgSession> {
    const { client } = connection;
    let session: PgSession | undefined;
    let early: LockError | undefined;
    const gone = (cause: unknown): void => {
      const error = new LockError(LockErrorCode.LOST, `PostgreSQL session${session ? ` ${session.pid}` : ''} was lost: ${cause instanceof Error ? cause.message : 'the connection ended'}`, {
        reason: 'session-lost',
        cause,
      });
      if (session === undefined) early = error;
      else session.lose(error);
    };
    const onError = (error: Error): void => gone(error);
    const onEndEvent = (): void => gone(undefined);
    const onNotification = (message: pg.Notification): void => {
      if (message.channel === settings.channel && message.payload !== undefined) settings.notified(message.payload);
    };
    client.on('error', onError);
    client.on('end', onEndEvent);
    client.on('notification', onNotification);
    const detach = (): void => {
      client.off('error', onError);
      client.off('end', onEndEvent);
      client.off('notification', onNotification);
    };
    const bounded = <R extends pg.QueryResultRow>(text: string, values: unknown[], what: string): Promise<R[]> =>
      withRequestTimeout(client.query<R>(text, values), settings.requestTimeoutMs, what).then((result) => result.rows);
    try {
      const openedAt = monotonicNow();
      const [who] = await bounded<{ pid: number; started: string | null }>(settings.statements.identity, [], 'reading the PostgreSQL session identity');
      if (who === undefined) throw new Error('pg_stat_activity does not show our own session');
      let serverExpiry = true;
      try {
        await bounded("SELECT set_config('idle_session_timeout', $1, false)", [`${settings.ttlMs}ms`], 'setting idle_session_timeout');
      } catch (error) {
        if (sqlState(error) !== UNDEFINED_OBJECT) throw error;
        serverExpiry = false;
      }
      await bounded(`LISTEN ${quoteIdentifier(settings.channel)}`, [], 'LISTEN for release notifications');
      await ensureTables(bounded, {
        exists: settings.statements.tablesExist,
        names: [settings.table, holdersTableName(settings.table)],
        creates: settings.statements.createTables,
        what: 'the token tables',
      });
      if (early !== undefined) throw early;
      session = new PgSession(connection, settings, { pid: who.pid, started: who.started, serverExpiry, openedAt }, detach, onEnd);
      return session;
    } catch (error) {
      detach();
      await connection.dispose();
      throw postgresFailure('opening a PostgreSQL session for locks', error);
    }
  }

  /** True while the session is believed alive and its validity has not run out. */
  get alive(): boolean {
    return this.#keeper.alive;
  }

  /** The monotonic deadline (ms) until which the session is known alive. */
  get validUntil(): number {
    return this.#keeper.validUntil;
  }

  /** Binds a grant to the session; returns the unbind function. */
  join(member: GrantObserver): () => void {
    return this.#keeper.join(member);
  }

  /** Sends a keepalive now; resolves the new deadline or rejects (`LOCK_LOST` when the session is gone). */
  keepAlive(): Promise<number> {
    return this.#keeper.keepAliveNow();
  }

  /**
   * Whether a local owner may try lock `id` in `mode`: an exclusive hold excludes every other local
   * hold of the id, shared holds exclude only exclusive ones.
   */
  mayTry(id: string, mode: AdvisoryMode): boolean {
    const holds = this.#holds.get(id);
    if (holds === undefined) return true;
    return mode === 'shared' ? holds.exclusive === 0 : holds.exclusive === 0 && holds.shared === 0;
  }

  /** Counts one hold of `id` in `mode`, held or in flight, on this session. */
  reserve(id: string, mode: AdvisoryMode): void {
    const holds = this.#holds.get(id) ?? { exclusive: 0, shared: 0 };
    holds[mode] += 1;
    this.#holds.set(id, holds);
  }

  /** Forgets one hold of `id` in `mode` once it is known unlocked (or never taken). */
  free(id: string, mode: AdvisoryMode): void {
    const holds = this.#holds.get(id);
    if (holds === undefined || holds[mode] === 0) return;
    holds[mode] -= 1;
    if (holds.exclusive === 0 && holds.shared === 0) this.#holds.delete(id);
  }

  /**
   * Readies the session for semaphores, once: makes sure the semaphore tables exist and (re)defines
   * the session-local acquire function. A failure is not kept: the next call tries again.
   */
  prepareSemaphores(): Promise<void> {
    this.#semaphoresReady ??= (async () => {
      const { table, semaphoreStatements } = this.#settings;
      await ensureTables((text, values, what) => this.query(text, values, what), {
        exists: semaphoreStatements.tablesExist,
        names: [semaphoreTableName(table), semaphoreHoldersTableName(table)],
        creates: semaphoreStatements.createTables,
        what: 'the semaphore tables',
      });
      await this.query(semaphoreStatements.createFunction, [], 'defining the semaphore function');
    })().catch((error: unknown) => {
      this.#semaphoresReady = undefined;
      throw error;
    });
    return this.#semaphoresReady;
  }

  /** Notes that this session may hold slots of semaphore `ids` (for a handed client's clean-up). */
  touchSemaphore(ids: SemaphoreLockIds): void {
    this.#semaphores.set(ids.semaphoreId, ids);
  }

  /**
   * Sends one statement, bounded by the request timeout. An answer renews the session from the send
   * time; a timeout leaves it uncertain until the next answer (the statement may still run later).
   */
  query<R extends pg.QueryResultRow>(text: string, values: unknown[], what: string): Promise<R[]> {
    return this.#send<R>(text, values, what, this.#settings.requestTimeoutMs, true).answer;
  }

  /**
   * Like {@link query}, and also resolves `outcome`: the statement's real result, which a request
   * that timed out still gets later (statements on one connection run in order), or the connection's
   * end. It is what decides how to undo an attempt whose answer did not come in time.
   */
  queryWithOutcome<R extends pg.QueryResultRow>(text: string, values: unknown[], what: string): { answer: Promise<R[]>; outcome: Promise<R[]> } {
    return this.#send<R>(text, values, what, this.#settings.requestTimeoutMs, true);
  }

  /** The server session answering is not ours (a transaction pooler in between): refuse and give it up. */
  checkPid(pid: unknown): void {
    this.#checkPid(pid);
  }

  /** Gives up the session: every lock hears `lost`, and the connection is ended so the server frees them. */
  lose(error?: LockError): void {
    this.#keeper.lose(error);
  }

  /**
   * Ends the session without reporting losses (its locks were released). An owned connection is
   * ended; a handed client is left as it was found: UNLISTEN, `idle_session_timeout` reset, and any
   * lock id still held unlocked.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#keeper.close();
    await this.#giveBack();
  }

  /** Called once the keeper ended the session (lost or closed). */
  async ended(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#giveBack();
  }

  async #giveBack(): Promise<void> {
    this.#detach();
    // While the session is not ended, a late error must still not crash the process.
    const ignore = (): void => undefined;
    this.#connection.client.on('error', ignore);
    try {
      if (this.#connection.owned) {
        // Bounded: ending a connection that just failed must not hang close().
        await withRequestTimeout(this.#connection.dispose(), this.#settings.requestTimeoutMs, 'ending the PostgreSQL connection').catch(() => undefined);
        return;
      }
      // A handed client outlives us: leave nothing of ours on its session. After a loss its locks
      // may still be held (a silent socket that comes back): unlock them too.
      const { client } = this.#connection;
      const statements: [string, unknown[]][] = [];
      for (const [id, holds] of this.#holds) {
        for (let i = 0; i < holds.exclusive; i += 1) statements.push([this.#settings.statements.exclusive.unlock, [id]]);
        for (let i = 0; i < holds.shared; i += 1) statements.push([this.#settings.statements.shared.unlock, [id]]);
      }
      if (this.#semaphoresReady !== undefined) {
        const touched = [...this.#semaphores.values()];
        const { unlockSlots, dropFunction } = this.#settings.semaphoreStatements.cleanUp;
        if (touched.length > 0) {
          statements.push([unlockSlots, [touched.map((ids) => ids.key1), touched.map((ids) => ids.key2), touched.map((ids) => ids.classid), touched.map((ids) => ids.objidBase)]]);
        }
        statements.push([dropFunction, []]);
      }
      statements.push([`UNLISTEN ${quoteIdentifier(this.#settings.channel)}`, []], ['RESET idle_session_timeout', []]);
      // One after another, after whatever is still running: see #previous.
      const cleanUp = (async () => {
        await this.#previous;
        for (const [text, values] of statements) await client.query(text, values);
      })();
      await withRequestTimeout(cleanUp, this.#settings.requestTimeoutMs, 'cleaning up the handed pg.Client').catch(() => undefined);
    } finally {
      this.#holds.clear();
      this.#semaphores.clear();
      this.#connection.client.off('error', ignore);
    }
  }

  #send<R extends pg.QueryResultRow>(text: string, values: unknown[], what: string, timeoutMs: number, suspendOnTimeout: boolean): { answer: Promise<R[]>; outcome: Promise<R[]> } {
    if (this.#closed) {
      const ended = Promise.reject(new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `${what}: the PostgreSQL session has ended`));
      ended.catch(() => undefined);
      return { answer: ended, outcome: ended };
    }
    // Validity counts from here, not from when the statement leaves the queue: earlier, so never longer.
    const sentAt = monotonicNow();
    const { client } = this.#connection;
    const outcome = this.#previous.then(() => client.query<R>(text, values)).then((result) => result.rows);
    this.#previous = outcome.catch(() => undefined);
    // Nobody may be listening to the outcome: its rejection must not go unhandled.
    outcome.catch(() => undefined);
    const answer = (async (): Promise<R[]> => {
      let rows: R[];
      try {
        rows = await withRequestTimeout(outcome, timeoutMs, what);
      } catch (error) {
        if (suspendOnTimeout && sqlState(error) === undefined) this.#keeper.suspend();
        throw error;
      }
      // Any answer proves the server session was alive when the request left.
      this.#keeper.contact(sentAt);
      return rows;
    })();
    return { answer, outcome };
  }

  #checkPid(pid: unknown): void {
    if (pid === this.pid) return;
    const error = new LockError(
      LockErrorCode.BACKEND_UNAVAILABLE,
      `the PostgreSQL connection is not a dedicated session: server process ${String(pid)} answered where ${this.pid} held our locks. ` +
        'Session advisory locks need a session of their own: connect directly or through PgBouncer in pool_mode=session, never transaction pooling',
    );
    this.lose(new LockError(LockErrorCode.LOST, error.message, { reason: 'session-lost', cause: error }));
    throw error;
  }
}
