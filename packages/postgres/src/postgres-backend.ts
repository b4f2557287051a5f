import {
  type BackendAcquireRequest,
  type BackendGrant,
  type BackendSemaphoreRequest,
  type BackendWarning,
  type LockBackend,
  type LockCapabilities,
  type LockHolder,
  type LockInfo,
  type SemaphoreInfo,
  LockError,
  LockErrorCode,
  monotonicNow,
  normalizeCapabilities,
  waitForGrant,
} from '@fencelock/core/adapter';
import { type ConnectionSource, openConnection } from './connection-source.js';
import { type LockIdFunction, checkedLockId, lockIdParts } from './lock-id.js';
import { PgSession, connectionBroken } from './pg-session.js';
import { PostgresSemaphores } from './postgres-semaphores.js';
import { postgresFailure } from './refusals.js';
import { ReleaseNotifier } from './release-notifier.js';
import { sessionGrant } from './session-grant.js';
import type { SemaphoreStatements } from './semaphore-sql.js';
import type { AdvisoryMode, Statements } from './sql.js';

/** What a PostgreSQL provider guarantees. */
export const POSTGRES_CAPABILITIES: LockCapabilities = normalizeCapabilities({
  // A per-key counter row bumped in the acquiring statement: durable on one primary (WAL), not
  // from a consensus log. Safe across restarts; across failover only to a synchronous standby.
  fencing: 'per-key',
  // The connection's error or end ends its locks at once; a silent socket by the session deadline.
  lossDetection: true,
  // extend() renews the session (a keepalive); the session's TTL is fixed.
  extend: true,
  // Releases NOTIFY the provider's channel; a holder whose session dies sends none (polling covers it).
  notify: true,
  // Try-locks and polling: no order between processes.
  fifo: false,
  // pg_try_advisory_lock_shared beside pg_try_advisory_lock; one session's holds are kept apart by
  // the provider's own counts (the server never makes a session conflict with itself).
  readWrite: true,
  expiry: 'session',
  ttlResolutionMs: 1,
  minTtlMs: 1_000,
  // Nothing can remove a session advisory lock but its own session: "deleting" it means ending the
  // holder's session (pg_terminate_backend), which the server announces on the holder's connection.
  deletionNotice: 'watch',
  // Each permit one advisory lock (a slot) of the two-int4 space; several are taken in one
  // statement, all or none, while the key's other acquirers wait on its row (postgres-semaphores.ts).
  semaphore: 'multi-permit',
});

/** The settings the backend runs with (validated by the provider). */
export interface PostgresBackendSettings {
  readonly source: ConnectionSource;
  readonly statements: Statements;
  readonly semaphoreStatements: SemaphoreStatements;
  readonly table: string;
  readonly channel: string;
  readonly lockId: LockIdFunction;
  readonly sessionTtlMs: number;
  readonly requestTimeoutMs: number;
}

interface AcquireRow {
  readonly granted: boolean;
  readonly token: string | null;
  readonly pid: number;
}

interface InspectRow {
  readonly pid: number;
  readonly mode: 'exclusive' | 'shared';
  readonly owner_id: string | null;
  readonly token: string | null;
  readonly metadata: Buffer | null;
}

// SQLSTATE classes raised before a statement executes (a dropped table, a missing privilege): the
// try-lock in it never ran, so there is nothing to unlock.
const BEFORE_EXECUTION = ['42', '0A'];

function ranOnServer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return !BEFORE_EXECUTION.some((cls) => code.startsWith(cls));
}

// Waiting between try-locks when no notification comes (a holder whose session died sends none).
const RETRY = { initialDelayMs: 10, maxDelayMs: 250, factor: 2 };

/**
 * The PostgreSQL lock backend: session advisory locks (`pg_try_advisory_lock(bigint)`) on one server
 * session per provider, a fencing token bumped in the same statement on a durable per-key counter,
 * release notifications over LISTEN/NOTIFY with core's polling loop as the fallback. Counting
 * semaphores live on the same session, in the two-int4 advisory lock space (postgres-semaphores.ts).
 */
export class PostgresBackend implements LockBackend {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_CAPABILITIES;
  readonly #settings: PostgresBackendSettings;
  readonly #notifier = new ReleaseNotifier();
  readonly #semaphores: PostgresSemaphores;
  #session: PgSession | undefined;
  #opening: Promise<PgSession> | undefined;
  // When the open in flight started (monotonic ms).
  #openingSince = 0;
  #closed = false;
  #handedClientEnded = false;

  constructor(settings: PostgresBackendSettings) {
    this.#settings = settings;
    this.#semaphores = new PostgresSemaphores({
      statements: settings.semaphoreStatements,
      channel: settings.channel,
      lockId: settings.lockId,
      requestTimeoutMs: settings.requestTimeoutMs,
      retry: RETRY,
      sessionFor: (since) => this.#sessionFor(since),
      notifier: this.#notifier,
    });
    const { source } = settings;
    if (source.kind === 'client') {
      source.client.once('end', () => {
        this.#handedClientEnded = true;
      });
    }
  }

  /** The session TTL: how long a silent session keeps its locks (the server is told the same). */
  get sessionTimeoutMs(): number {
    return this.#settings.sessionTtlMs;
  }

  /** The current session, for tests that end it from the server (its pid) or inspect it. */
  get session(): PgSession | undefined {
    return this.#session;
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    const id = checkedLockId(this.#settings.lockId, request.key).toString();
    const since = monotonicNow();
    return waitForGrant(request, () => this.#attempt(request, id, since), {
      retry: RETRY,
      wakeup: () => this.#notifier.wakeup(id),
    });
  }

  async inspect(key: string): Promise<LockInfo | undefined> {
    const id = checkedLockId(this.#settings.lockId, key);
    const { classid, objid } = lockIdParts(id);
    const session = await this.#sessionFor(monotonicNow());
    const rows = await session.query<InspectRow>(this.#settings.statements.inspect, [id.toString(), classid, objid], `inspecting lock "${key}"`);
    if (rows.length === 0) return undefined;
    // A holder row is joined only where its session (pid and start time) holds the lock in its mode:
    // otherwise the holder is another program's session, named by its server process.
    const holders = rows.map(
      (row): LockHolder => ({
        ownerId: row.owner_id ?? `postgres-pid:${row.pid}`,
        mode: row.mode,
        fencingToken: row.token !== null ? BigInt(row.token) : undefined,
        remainingMs: undefined,
        metadata: row.metadata !== null ? row.metadata.toString('utf8') : undefined,
      }),
    );
    return { key, holders };
  }

  acquireSemaphore(request: BackendSemaphoreRequest): Promise<BackendGrant | undefined> {
    return this.#semaphores.acquire(request);
  }

  inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    return this.#semaphores.inspect(key);
  }

  async checkConfiguration(): Promise<readonly BackendWarning[]> {
    const session = await this.#openSession();
    const warnings: BackendWarning[] = [];
    if (!session.serverExpiry) {
      warnings.push({
        code: 'postgres-no-idle-session-timeout',
        message:
          'the server has no idle_session_timeout (PostgreSQL before 14): a silent client keeps its locks until TCP notices it is gone, long after its handle reported them lost. Use PostgreSQL 14 or later, or set tcp_keepalives_* on the server',
      });
    }
    const rows = await session.query<{ synchronous_commit: string; fsync: string }>(
      "SELECT current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync",
      [],
      'reading the durability settings',
    );
    const settings = rows[0];
    if (settings?.synchronous_commit === 'off' || settings?.fsync === 'off') {
      warnings.push({
        code: 'postgres-token-durability',
        message: `synchronous_commit=${settings.synchronous_commit}, fsync=${settings.fsync}: a server crash can lose the last fencing-token increments, and a restarted server then hands out a token again. Keep both on for the token table`,
      });
    }
    return warnings;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const opening = this.#opening;
    if (opening !== undefined) await opening.catch(() => undefined);
    const session = this.#session;
    this.#session = undefined;
    await session?.close();
  }

  #openSession(): Promise<PgSession> {
    if (this.#closed) return Promise.reject(new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the PostgreSQL provider is closed'));
    const current = this.#session;
    if (current?.alive) return Promise.resolve(current);
    if (this.#opening === undefined) {
      this.#openingSince = monotonicNow();
      this.#opening = this.#open().finally(() => {
        this.#opening = undefined;
      });
    }
    return this.#opening;
  }

  /**
   * The session for a call made at `since`. An open that the call joined but did not start (the
   * provider's configuration check, another key's acquire) may have failed for reasons older than
   * the call: a process paused mid-open finds its request timeouts expired on resume, replies
   * unread, or its new session already past its validity. Such an open earns the call one open of
   * its own, whose outcome is the answer.
   */
  async #sessionFor(since: number): Promise<PgSession> {
    const joined = this.#opening !== undefined && this.#openingSince < since;
    let session: PgSession;
    try {
      session = await this.#openSession();
    } catch (error) {
      if (!joined || this.#closed) throw error;
      return this.#openSession();
    }
    if (session.alive || this.#closed) return session;
    session.lose();
    return this.#openSession();
  }

  async #open(): Promise<PgSession> {
    const { source, statements, semaphoreStatements, table, channel, sessionTtlMs, requestTimeoutMs } = this.#settings;
    const connection = await openConnection(source, requestTimeoutMs, () => this.#handedClientEnded);
    const session = await PgSession.open(
      connection,
      { statements, semaphoreStatements, table, channel, ttlMs: sessionTtlMs, requestTimeoutMs, notified: (id) => this.#notifier.notify(id) },
      (ended) => {
        if (this.#session === ended) this.#session = undefined;
        // Lost or closed: end the connection (the server frees whatever it still holds).
        void ended.ended();
      },
    );
    if (this.#closed) {
      await session.close();
      throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the PostgreSQL provider is closed');
    }
    this.#session = session;
    return session;
  }

  /** One try-lock: a grant, or `undefined` while another session (or another local owner) holds the lock. */
  async #attempt(request: BackendAcquireRequest, id: string, since: number, reconnect = true): Promise<BackendGrant | undefined> {
    const session = await this.#sessionFor(since);
    const { mode } = request;
    // Advisory locks are re-entrant within a session and its shared and exclusive holds never
    // conflict: a lock this provider holds (for another owner, or for a key whose id collides) must
    // read as held whenever the modes conflict, not be granted again.
    if (!session.mayTry(id, mode)) return undefined;
    session.reserve(id, mode);
    const metadata = request.metadata === undefined ? null : Buffer.from(request.metadata, 'utf8');
    const sent = session.queryWithOutcome<AcquireRow>(this.#settings.statements[mode].acquire, [id, request.ownerId, session.identity, metadata], `acquiring lock "${request.key}"`);
    let row: AcquireRow | undefined;
    try {
      [row] = await sent.answer;
      session.checkPid(row?.pid);
    } catch (error) {
      this.#undo(session, id, mode, request.ownerId, sent.outcome);
      // A session opened before this call whose connection was already broken (an idle socket
      // reset while nobody wrote on it): give it up and try once on a new session, as a client
      // that reconnects would. Whatever the old session took ends with it on the server.
      if (reconnect && connectionBroken(error) && session.openedAt < since) {
        session.lose();
        return this.#attempt(request, id, since, false);
      }
      throw postgresFailure(`acquiring lock "${request.key}"`, error, request.key);
    }
    if (row?.granted !== true || row.token === null) {
      session.free(id, mode);
      return undefined;
    }
    return this.#grant(request, session, id, BigInt(row.token));
  }

  /**
   * Undoes an attempt whose answer did not come (a timeout: the statement still runs, later) or
   * failed after its try-lock ran (a session lock survives the statement's rollback). What to undo
   * follows the statement's real outcome: unlocking blindly could take away one of the counted
   * holds of another local owner of the same id and mode.
   */
  #undo(session: PgSession, id: string, mode: AdvisoryMode, ownerId: string, outcome: Promise<AcquireRow[]>): void {
    const { statements } = this.#settings;
    const unlock = async (): Promise<void> => {
      await session.query(statements[mode].unlock, [id], 'undoing an uncertain acquire');
      await session.query(statements.forget, [ownerId, id], 'forgetting an uncertain acquire');
    };
    outcome
      .then(
        ([row]) => (row?.granted === true ? unlock() : undefined),
        (error: unknown) => (ranOnServer(error) ? unlock() : undefined),
      )
      .then(
        () => session.free(id, mode),
        // Unanswered: give the session up, so that the server ends it and frees the lock.
        () => session.lose(),
      );
  }

  #grant(request: BackendAcquireRequest, session: PgSession, id: string, token: bigint): BackendGrant {
    const { key, mode, ownerId } = request;
    const { channel } = this.#settings;
    const statements = this.#settings.statements[mode];
    return sessionGrant({
      key,
      kind: 'lock',
      observer: request.observer,
      session,
      token,
      releaseOnce: async () => {
        const [row] = await session.query<{ released: boolean }>(statements.release, [id, channel, id, ownerId], `releasing lock "${key}"`);
        session.free(id, mode);
        return row?.released === true;
      },
    });
  }
}
