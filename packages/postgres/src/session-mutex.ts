import type { BackendGrant, GrantObserver } from '@fencelock/core/adapter';
import { type PgSession, connectionBroken } from './pg-session.js';
import { postgresFailure } from './refusals.js';
import { sessionGrant } from './session-grant.js';
import type { AdvisoryMode, ModeStatements } from './sql.js';

/** One try of a bigint advisory lock on the provider's session, for a lock or an election. */
export interface MutexAttempt {
  /** The user's key (a lock's key, an election's name), for errors. */
  readonly key: string;
  /** `lock` or `election`, for errors ("acquiring lock …"). */
  readonly kind: string;
  readonly mode: AdvisoryMode;
  /** The advisory lock id, as text. */
  readonly id: string;
  readonly ownerId: string;
  /** Stored with the holder row (a lock's metadata, a campaigner's value). */
  readonly metadata: string | undefined;
  readonly observer: GrantObserver;
  /** The statements of this mode (the locks' or the elections'). */
  readonly statements: ModeStatements;
  /** The payload its release (and, where the statement sends one, its grant) notifies with. */
  readonly payload: string;
  /** Extra parameters after the first four of `statements.acquire` (an election's channel and payload). */
  readonly extra: readonly unknown[];
}

/** What the mutex needs of the backend. */
export interface SessionMutexSettings {
  readonly channel: string;
  /** `$1` owner id, `$2` lock id: forgets a holder row an uncertain attempt may have left. */
  readonly forget: string;
  /** The backend's session for a call made at `since` (see `PostgresBackend`). */
  readonly sessionFor: (since: number) => Promise<PgSession>;
}

interface AcquireRow {
  readonly granted: boolean;
  readonly token: string | null;
  readonly pid: number;
}

// SQLSTATE classes raised before a statement executes (a dropped table, a missing privilege): the
// try-lock in it never ran, so there is nothing to unlock.
const BEFORE_EXECUTION = ['42', '0A'];

function ranOnServer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return !BEFORE_EXECUTION.some((cls) => code.startsWith(cls));
}

/**
 * The adapter's mutex: a session advisory lock taken with a try-lock that bumps the id's fencing
 * counter and records the holder in the same statement. The provider's locks and its elections are
 * both this mutex, on ids of their own (see election-id.ts).
 */
export class SessionMutex {
  readonly #settings: SessionMutexSettings;

  constructor(settings: SessionMutexSettings) {
    this.#settings = settings;
  }

  /** One try-lock: a grant, or `undefined` while another session (or another local owner) holds the lock. */
  async attempt(request: MutexAttempt, since: number, reconnect = true): Promise<BackendGrant | undefined> {
    const session = await this.#settings.sessionFor(since);
    const { mode, id } = request;
    const what = `acquiring ${request.kind} "${request.key}"`;
    // Advisory locks are re-entrant within a session and its shared and exclusive holds never
    // conflict: a lock this provider holds (for another owner, or for a key whose id collides) must
    // read as held whenever the modes conflict, not be granted again.
    if (!session.mayTry(id, mode)) return undefined;
    session.reserve(id, mode);
    const metadata = request.metadata === undefined ? null : Buffer.from(request.metadata, 'utf8');
    const sent = session.queryWithOutcome<AcquireRow>(request.statements.acquire, [id, request.ownerId, session.identity, metadata, ...request.extra], what);
    let row: AcquireRow | undefined;
    try {
      [row] = await sent.answer;
      session.checkPid(row?.pid);
    } catch (error) {
      this.#undo(session, request, sent.outcome);
      // A session opened before this call whose connection was already broken (an idle socket
      // reset while nobody wrote on it): give it up and try once on a new session, as a client
      // that reconnects would. Whatever the old session took ends with it on the server.
      if (reconnect && connectionBroken(error) && session.openedAt < since) {
        session.lose();
        return this.attempt(request, since, false);
      }
      throw postgresFailure(what, error, request.key);
    }
    if (row?.granted !== true || row.token === null) {
      session.free(id, mode);
      return undefined;
    }
    return this.#grant(request, session, BigInt(row.token));
  }

  /**
   * Undoes an attempt whose answer did not come (a timeout: the statement still runs, later) or
   * failed after its try-lock ran (a session lock survives the statement's rollback). What to undo
   * follows the statement's real outcome: unlocking blindly could take away one of the counted
   * holds of another local owner of the same id and mode.
   */
  #undo(session: PgSession, request: MutexAttempt, outcome: Promise<AcquireRow[]>): void {
    const { id, mode, ownerId, statements } = request;
    const unlock = async (): Promise<void> => {
      await session.query(statements.unlock, [id], 'undoing an uncertain acquire');
      await session.query(this.#settings.forget, [ownerId, id], 'forgetting an uncertain acquire');
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

  #grant(request: MutexAttempt, session: PgSession, token: bigint): BackendGrant {
    const { key, kind, id, mode, ownerId, statements, payload } = request;
    const { channel } = this.#settings;
    return sessionGrant({
      key,
      kind,
      observer: request.observer,
      session,
      token,
      releaseOnce: async () => {
        const [row] = await session.query<{ released: boolean }>(statements.release, [id, channel, payload, ownerId], `releasing ${kind} "${key}"`);
        session.free(id, mode);
        return row?.released === true;
      },
    });
  }
}
