/**
 * Leader election on PostgreSQL: an election is the adapter's mutex (session-mutex.ts) of the name,
 * on an advisory lock id of its own (election-id.ts), so that a lock, a semaphore and an election of
 * the same name never block each other.
 * - **The leader** is the session holding the election's advisory lock; the campaigner's value is
 *   the holder row's metadata, written in the granting statement.
 * - **The term** is the mutex's fencing token: the id's durable counter, bumped in the granting
 *   statement, so strictly increasing per name across leaders, crashes and restarts.
 * - **Loss.** The lock is the session's: when the session is known ended (`pg_terminate_backend`, a
 *   reset, a silent socket past the session TTL) the leader's signal aborts, and the server has freed
 *   the lock for the next campaigner at that moment.
 * - **Changes heard.** A grant and a resignation each NOTIFY the provider's channel with
 *   `election:<id>` in their own statement; campaigners wake on it and watchers are told. A new
 *   session (the LISTEN was down meanwhile) tells every watcher too. A leader whose session dies
 *   sends nothing, and PostgreSQL tells no other session of it: when a campaigner waits, its grant
 *   is heard, but a leader leaving nobody behind is only seen by reading. Hence `election: 'polled'`:
 *   `observe` reads every `pollMs` and is woken sooner by the notices.
 */
import { type BackendCampaignRequest, type BackendGrant, type LeaderInfo, type RetryOptions, monotonicNow, retryableFailure, waitForGrant } from '@fencelock/core/adapter';
import { electionLockId, electionPayload } from './election-id.js';
import { type LockIdFunction, checkedLockId, lockIdParts } from './lock-id.js';
import type { PgSession } from './pg-session.js';
import { postgresFailure } from './refusals.js';
import type { ReleaseNotifier } from './release-notifier.js';
import type { SessionMutex } from './session-mutex.js';
import type { ElectionStatements } from './sql.js';

/** What the elections need of the backend. */
export interface PostgresElectionSettings {
  readonly statements: ElectionStatements;
  readonly channel: string;
  readonly lockId: LockIdFunction;
  readonly retry: Partial<RetryOptions>;
  readonly mutex: SessionMutex;
  /** The backend's session for a call made at `since` (see `PostgresBackend`). */
  readonly sessionFor: (since: number) => Promise<PgSession>;
  readonly notifier: ReleaseNotifier;
}

interface LeaderRow {
  readonly token: string;
  readonly metadata: Buffer | null;
}

/** The leader elections of `@fencelock/postgres` (see the module comment). */
export class PostgresElections {
  readonly #settings: PostgresElectionSettings;

  constructor(settings: PostgresElectionSettings) {
    this.#settings = settings;
  }

  /** `LockBackend.campaign`: tries, then waits until the deadline (notified, or polling). */
  async campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    const id = this.#id(request.key);
    const payload = electionPayload(id);
    const since = monotonicNow();
    const { mutex, statements, channel, retry, notifier } = this.#settings;
    const attempt = {
      key: request.key,
      kind: 'election',
      mode: 'exclusive',
      id: id.toString(),
      ownerId: request.ownerId,
      metadata: request.value,
      observer: request.observer,
      statements,
      payload,
      extra: [channel, payload],
    } as const;
    return waitForGrant(request, () => mutex.attempt(attempt, since), { retry, wakeup: () => notifier.wakeup(payload), retryFailed: retryableFailure });
  }

  /** `LockBackend.leader`: one query, the holder row whose session holds the election now. */
  async leader(name: string): Promise<LeaderInfo | undefined> {
    const id = this.#id(name);
    const { classid, objid } = lockIdParts(id);
    const session = await this.#settings.sessionFor(monotonicNow());
    const what = `reading the leader of "${name}"`;
    let rows: LeaderRow[];
    try {
      rows = await session.query<LeaderRow>(this.#settings.statements.leader, [id.toString(), classid, objid], what);
    } catch (error) {
      throw postgresFailure(what, error, name);
    }
    const [row] = rows;
    if (row === undefined) return undefined;
    return { name, value: row.metadata === null ? '' : row.metadata.toString('utf8'), term: BigInt(row.token) };
  }

  /**
   * `LockBackend.watchLeader`: `onChange` on each notice of the election, and whenever a new session
   * LISTENs (see the backend). In place once the session is open: its LISTEN came first.
   */
  async watchLeader(name: string, onChange: () => void, signal: AbortSignal): Promise<void> {
    const payload = electionPayload(this.#id(name));
    if (signal.aborted) return;
    const unlisten = this.#settings.notifier.listen(payload, onChange);
    signal.addEventListener('abort', unlisten, { once: true });
    try {
      await this.#settings.sessionFor(monotonicNow());
    } catch (error) {
      signal.removeEventListener('abort', unlisten);
      unlisten();
      throw error;
    }
  }

  #id(name: string): bigint {
    return electionLockId(checkedLockId(this.#settings.lockId, name));
  }
}
