import {
  type BackendAcquireRequest,
  type BackendGrant,
  type BackendWarning,
  type LockBackend,
  type LockCapabilities,
  type LockHolder,
  type LockInfo,
  LockError,
  LockErrorCode,
  asLockError,
  backendUnavailableError,
  lockLostError,
  monotonicNow,
  normalizeCapabilities,
  waitForGrant,
} from '@fencelock/core/adapter';
import { type ConnectionSource, openConnection } from './connection-source.js';
import { type LockIdFunction, checkedLockId, lockIdParts } from './lock-id.js';
import { PgSession } from './pg-session.js';
import { ReleaseNotifier } from './release-notifier.js';
import { type Statements, sessionIdentity } from './sql.js';

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
  readWrite: false,
  expiry: 'session',
  ttlResolutionMs: 1,
  minTtlMs: 1_000,
  // Nothing can remove a session advisory lock but its own session: "deleting" it means ending the
  // holder's session (pg_terminate_backend), which the server announces on the holder's connection.
  deletionNotice: 'watch',
});

/** The settings the backend runs with (validated by the provider). */
export interface PostgresBackendSettings {
  readonly source: ConnectionSource;
  readonly statements: Statements;
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
  readonly started: string | null;
  readonly owner_id: string | null;
  readonly holder_session: string | null;
  readonly token: string | null;
  readonly metadata: Buffer | null;
}

// Waiting between try-locks when no notification comes (a holder whose session died sends none).
const RETRY = { initialDelayMs: 10, maxDelayMs: 250, factor: 2 };

/**
 * The PostgreSQL lock backend: session advisory locks (`pg_try_advisory_lock(bigint)`) on one server
 * session per provider, a fencing token bumped in the same statement on a durable per-key counter,
 * release notifications over LISTEN/NOTIFY with core's polling loop as the fallback.
 */
export class PostgresBackend implements LockBackend {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_CAPABILITIES;
  readonly #settings: PostgresBackendSettings;
  readonly #notifier = new ReleaseNotifier();
  #session: PgSession | undefined;
  #opening: Promise<PgSession> | undefined;
  // When the open in flight started (monotonic ms).
  #openingSince = 0;
  #closed = false;
  #handedClientEnded = false;

  constructor(settings: PostgresBackendSettings) {
    this.#settings = settings;
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
    const holders = rows.map((row): LockHolder => {
      // The token row names the last fencelock holder; it is this holder only if the sessions match.
      const ours = row.holder_session !== null && row.holder_session === sessionIdentity(row.pid, row.started);
      return {
        ownerId: ours && row.owner_id !== null ? row.owner_id : `postgres-pid:${row.pid}`,
        mode: 'exclusive',
        fencingToken: ours && row.token !== null ? BigInt(row.token) : undefined,
        remainingMs: undefined,
        metadata: ours && row.metadata !== null ? row.metadata.toString('utf8') : undefined,
      };
    });
    return { key, holders };
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
    const { source, statements, table, channel, sessionTtlMs, requestTimeoutMs } = this.#settings;
    const connection = await openConnection(source, requestTimeoutMs, () => this.#handedClientEnded);
    const session = await PgSession.open(
      connection,
      { statements, table, channel, ttlMs: sessionTtlMs, requestTimeoutMs, notified: (id) => this.#notifier.notify(id) },
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

  /** One try-lock: a grant, or `undefined` while another session holds the lock. */
  async #attempt(request: BackendAcquireRequest, id: string, since: number): Promise<BackendGrant | undefined> {
    const session = await this.#sessionFor(since);
    // Advisory locks are re-entrant within a session: a lock this provider holds (for another owner,
    // or for a key whose id collides) must read as held, not be granted twice.
    if (session.holds(id)) return undefined;
    session.reserve(id);
    const metadata = request.metadata === undefined ? null : Buffer.from(request.metadata, 'utf8');
    let row: AcquireRow | undefined;
    try {
      [row] = await session.query<AcquireRow>(this.#settings.statements.acquire, [id, request.ownerId, session.identity, metadata], `acquiring lock "${request.key}"`);
      session.checkPid(row?.pid);
    } catch (error) {
      // The outcome is unknown (a timeout: the statement may still run; an error after the
      // try-lock: a session lock survives the statement's rollback). An unlock sent now runs after
      // it on the same connection and undoes it either way.
      this.#undo(session, id);
      throw asLockError(error, `acquiring lock "${request.key}" failed`, request.key);
    }
    if (row?.granted !== true || row.token === null) {
      session.free(id);
      return undefined;
    }
    return this.#grant(request, session, id, BigInt(row.token));
  }

  #undo(session: PgSession, id: string): void {
    session.query(this.#settings.statements.unlock, [id], 'undoing an uncertain acquire').then(
      () => session.free(id),
      // Unanswered: give the session up, so that the server ends it and frees the lock.
      () => session.lose(),
    );
  }

  #grant(request: BackendAcquireRequest, session: PgSession, id: string, token: bigint): BackendGrant {
    const { key, observer } = request;
    const { statements, channel } = this.#settings;
    let ended = false;
    let leave = (): void => undefined;
    const end = (): void => {
      if (ended) return;
      ended = true;
      leave();
    };
    leave = session.join({
      lost: (error) => {
        if (ended) return;
        end();
        observer.lost(lockLostError(key, 'session-lost', error));
      },
      uncertain: () => observer.uncertain(),
      recovered: () => observer.recovered(),
      renewed: (validUntil) => observer.renewed(validUntil),
    });
    return {
      fencingToken: token,
      validUntil: session.validUntil,
      extend: async (): Promise<number> => {
        if (ended) throw lockLostError(key, 'session-lost');
        try {
          // Only the session can drop the lock, and a keepalive answered by it proves it alive.
          return await session.keepAlive();
        } catch (error) {
          if (!session.alive) throw lockLostError(key, 'session-lost', error);
          throw backendUnavailableError(`extending lock "${key}" failed`, error, key);
        }
      },
      // One bounded attempt; core retries a rejection in the background.
      release: async (): Promise<boolean> => {
        if (ended) return false;
        // The session is gone (or being ended): the server frees its locks with it.
        if (!session.alive) {
          end();
          return false;
        }
        let released: boolean;
        try {
          const [row] = await session.query<{ released: boolean }>(statements.release, [id, channel, id], `releasing lock "${key}"`);
          released = row?.released === true;
        } catch (error) {
          throw backendUnavailableError(`releasing lock "${key}" failed`, error, key);
        }
        session.free(id);
        end();
        return released;
      },
    };
  }
}
