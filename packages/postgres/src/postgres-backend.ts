import {
  type BackendAcquireRequest,
  type BackendCampaignRequest,
  type BackendGrant,
  type BackendSemaphoreRequest,
  type BackendWarning,
  type LeaderInfo,
  type LockBackend,
  type LockCapabilities,
  type LockHolder,
  type LockInfo,
  type SemaphoreInfo,
  LockError,
  LockErrorCode,
  monotonicNow,
  normalizeCapabilities,
  retryableFailure,
  waitForGrant,
} from '@fencelock/core/adapter';
import { type ConnectionSource, openConnection } from './connection-source.js';
import { type LockIdFunction, checkedLockId, lockIdParts } from './lock-id.js';
import { PgSession } from './pg-session.js';
import { PostgresElections } from './postgres-elections.js';
import { PostgresSemaphores } from './postgres-semaphores.js';
import { ReleaseNotifier } from './release-notifier.js';
import type { SemaphoreStatements } from './semaphore-sql.js';
import { SessionMutex } from './session-mutex.js';
import type { Statements } from './sql.js';

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
  // The adapter's mutex on an id of its own (postgres-elections.ts). Grants and resignations NOTIFY,
  // but a leader whose session dies sends nothing and no other session is told: observe also reads.
  election: 'polled',
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

interface InspectRow {
  readonly pid: number;
  readonly mode: 'exclusive' | 'shared';
  readonly owner_id: string | null;
  readonly token: string | null;
  readonly metadata: Buffer | null;
}

// Waiting between try-locks when no notification comes (a holder whose session died sends none).
const RETRY = { initialDelayMs: 10, maxDelayMs: 250, factor: 2 };

/**
 * The PostgreSQL lock backend: session advisory locks (`pg_try_advisory_lock(bigint)`) on one server
 * session per provider, a fencing token bumped in the same statement on a durable per-key counter,
 * release notifications over LISTEN/NOTIFY with core's polling loop as the fallback. Counting
 * semaphores live on the same session, in the two-int4 advisory lock space (postgres-semaphores.ts);
 * leader elections are the same mutex as the locks, on ids of their own (postgres-elections.ts).
 */
export class PostgresBackend implements LockBackend {
  readonly name = 'postgres';
  readonly capabilities = POSTGRES_CAPABILITIES;
  readonly #settings: PostgresBackendSettings;
  readonly #notifier = new ReleaseNotifier();
  readonly #semaphores: PostgresSemaphores;
  readonly #mutex: SessionMutex;
  readonly #elections: PostgresElections;
  #session: PgSession | undefined;
  #opening: Promise<PgSession> | undefined;
  // When the open in flight started (monotonic ms).
  #openingSince = 0;
  #closed = false;
  #handedClientEnded = false;

  constructor(settings: PostgresBackendSettings) {
    this.#settings = settings;
    const sessionFor = (since: number): Promise<PgSession> => this.#sessionFor(since);
    this.#mutex = new SessionMutex({ channel: settings.channel, forget: settings.statements.forget, sessionFor });
    this.#elections = new PostgresElections({
      statements: settings.statements.election,
      channel: settings.channel,
      lockId: settings.lockId,
      retry: RETRY,
      mutex: this.#mutex,
      sessionFor,
      notifier: this.#notifier,
    });
    this.#semaphores = new PostgresSemaphores({
      statements: settings.semaphoreStatements,
      channel: settings.channel,
      lockId: settings.lockId,
      requestTimeoutMs: settings.requestTimeoutMs,
      retry: RETRY,
      sessionFor,
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
    const { key, mode, ownerId, metadata, observer } = request;
    const statements = this.#settings.statements[mode];
    const attempt = { key, kind: 'lock', mode, id, ownerId, metadata, observer, statements, payload: id, extra: [] };
    return waitForGrant(request, () => this.#mutex.attempt(attempt, since), {
      retry: RETRY,
      wakeup: () => this.#notifier.wakeup(id),
      // A timed-out try is undone by its real outcome (see SessionMutex), and the id stays reserved
      // on its session until then: trying again meanwhile cannot hold the lock twice.
      retryFailed: retryableFailure,
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

  campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    return this.#elections.campaign(request);
  }

  leader(name: string): Promise<LeaderInfo | undefined> {
    return this.#elections.leader(name);
  }

  watchLeader(name: string, onChange: () => void, signal: AbortSignal): Promise<void> {
    return this.#elections.watchLeader(name, onChange, signal);
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
    // The LISTEN was down until now (or never up): any notice may have been missed meanwhile.
    this.#notifier.notifyAll();
    return session;
  }
}
