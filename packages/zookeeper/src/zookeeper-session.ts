/**
 * One ZooKeeper session: what only ZooKeeper needs around core's {@link SessionKeeper}.
 *
 * The keeper owns the session's life as fencelock sees it: validity from the send time of the last
 * request the server answered plus the session timeout the server GRANTED, minus core's drift margin;
 * keepalives (`exists /`) a third of that timeout after the last answered request; the deadline timer
 * that declares every grant lost even when the client stays silent (node-zookeeper-client has no read
 * timeout: with its server paused it raised no event for 8 s); and the `uncertain` / `recovered` /
 * `renewed` / `lost` fan-out to the grants. This class feeds it: every answered request (`contact`),
 * the client's connection state (`suspend` on a disconnection, `lose` on expiry), and the keepalive
 * request itself. It also keeps what the keeper cannot know: the client, its socket (writes corked per
 * turn, dropped after 2/3 of the session timeout without an answer, as the Java client's read timeout
 * does), the connection waiters, and the watches.
 *
 * Core's drift rule (1 % + 2 ms) is enough here: a ZooKeeper server expires sessions on tick
 * boundaries rounded UP (a session is put in the expiry bucket of the next tick after its timeout), so
 * the server never expires a session before the timeout has passed on its own clock.
 */
import {
  type AbortLike,
  type GrantObserver,
  LockError,
  LockErrorCode,
  RequestDeadlines,
  RequestTimeoutError,
  SessionKeeper,
  TurnCork,
  backendUnavailableError,
  forbiddenError,
  lockLostError,
  monotonicNow,
  waitFor,
  withRequestTimeout,
} from '@fencelock/core/adapter';
import { type ACL, type Client, type Event, Exception, State, createClient } from 'node-zookeeper-client';
import type { ResolvedAccess } from './access.js';
import { NodeWatches } from './node-watches.js';
import { PendingRequest, type RequestHost } from './pending-request.js';
import type { SessionTiming } from './options.js';
import { restoreWatchesInParts } from './set-watches.js';
import { type WireRequests, wireRequestsOn } from './wire-requests.js';

/** A grant that lives as long as the session. */
export interface SessionGrant {
  readonly key: string;
  readonly nodePath: string;
  readonly observer: GrantObserver;
}

/** How a session times itself. */
export interface SessionSettings {
  /** The timing that follows from a session timeout (the requested one, then the granted one). */
  readonly timingFor: (timeoutMs: number) => SessionTiming;
  /** Told the timing derived from the granted timeout, on every (re)connection. */
  readonly granted?: (timing: SessionTiming) => void;
  /** Who the session is and who may touch the znodes it creates. */
  readonly access: ResolvedAccess;
}

/** Why a session can no longer be used. */
export type SessionEnd = 'expired' | 'deadline' | 'closed' | 'auth-failed';

/** Options of {@link ZooKeeperSession.request}. */
export interface RequestOptions<T> {
  /** Called with the value of a success answered after the request was given up (timed out, aborted). */
  readonly late?: (value: T) => void;
  /** Gives the request up (rejecting with the signal's reason); it may still be applied. */
  readonly signal?: AbortLike;
  /** The reply bound, in ms. @default the session's request timeout */
  readonly timeoutMs?: number;
}

/** The ZooKeeper error code of `error` (e.g. `Exception.NO_NODE`), if it is a ZooKeeper exception. */
export function zooKeeperCode(error: unknown): number | undefined {
  if (error instanceof Exception) return error.code;
  return undefined;
}

// Answers that mean this identity may not do it: asking again gets the same answer.
const REFUSALS: ReadonlyMap<number, string> = new Map([
  [Exception.NO_AUTH, 'permission denied by the znode ACL (NoAuth)'],
  [Exception.INVALID_ACL, 'the ACL was refused (InvalidACL)'],
  [Exception.AUTH_FAILED, 'authentication failed (AuthFailed)'],
]);

/** A `LOCK_FORBIDDEN` error for a ZooKeeper refusal, or `undefined` for any other error. */
function refusal(code: number | undefined, what: string, error: unknown): LockError | undefined {
  const detail = code === undefined ? undefined : REFUSALS.get(code);
  return detail === undefined ? undefined : forbiddenError('ZooKeeper', what, detail, error);
}

// Error codes that are not an answer from the server (so they prove nothing about the session).
const NOT_AN_ANSWER = new Set<number>([Exception.CONNECTION_LOSS, Exception.SESSION_EXPIRED, Exception.AUTH_FAILED]);

// How the deadline rings treat requests: one handler object for all of them.
const PENDING_DEADLINES = {
  settled: (request: PendingRequest<unknown>): boolean => request.settled,
  expire: (request: PendingRequest<unknown>): void => request.expire(),
};

// The Java client's read timeout: no answer for this share of the session timeout means the server
// went silent (paused, partitioned), and the socket is dropped so the client moves to another server
// while the session can still be saved.
const READ_TIMEOUT_FRACTION = 2 / 3;

// Answers are reported to the keeper once they moved validity by this share of the timeout: each
// report re-arms the timers of every held handle, and an acquisition makes 4 requests (64 held locks
// would mean 256 re-arms per acquisition). Validity then lags by less than this step, on the safe side.
const CONTACT_STEP_FRACTION = 1 / 24;

// How long a close request may take before the client is left to the server's expiry.
const CLOSE_WAIT_MS = 2_000;

interface ConnectionManagerInternals {
  state?: number;
  connect?: () => void;
  socket?: { destroy(): void; cork?: () => void; uncork?: () => void };
}

// node-zookeeper-client's ConnectionManager states that can send requests (CONNECTED, CONNECTED_READ_ONLY).
const MANAGER_CONNECTED = new Set([2, 3]);

/**
 * One node-zookeeper-client session as fencelock tracks it. Internal; one per provider at a time (a
 * new one after expiry or a deadline loss, for clients the provider opened).
 */
export class ZooKeeperSession {
  /** The client behind the session. */
  readonly client: Client;
  /** True when fencelock opened the client and may close it. */
  readonly owned: boolean;
  /** The session's watches: one watcher function per session, dispatching to the current waiters. */
  readonly watches = new NodeWatches();
  /**
   * The lock cycle's requests encoded by the adapter (CREATE2 among them: the create's reply carries
   * the stat), when the client's internals allow it; see {@link listChildren} and {@link removeNode}.
   */
  readonly wire: WireRequests | undefined;
  readonly #settings: SessionSettings;
  // Every cadence of the session: from the requested timeout until the server answers, then from
  // the one it granted (a server clamps the request into its own bounds).
  #timing: SessionTiming;
  #state: 'connecting' | 'connected' | 'disconnected' | 'dead' = 'connecting';
  #end: SessionEnd | undefined;
  // Made by the first answer of the server (only then is the granted timeout known). A client we
  // were given outlives a keeper that ran out: the next answer makes a new one.
  #keeper: SessionKeeper | undefined;
  #keeperEndedAt = Number.NEGATIVE_INFINITY;
  // The send time of the last answer reported to the keeper (see CONTACT_STEP_FRACTION).
  #reportedSent = Number.NEGATIVE_INFINITY;
  // Since when the server has been silent, for the read timeout: the send time of the last answered
  // request, or the moment the current connection was made.
  #heardAt = monotonicNow();
  // When the client started the connection attempt in progress: its connect request left after it.
  // Unknown for a client we were given (it may have sent one before we saw it).
  #connectingSince: number;
  readonly #grants = new Map<SessionGrant, () => void>();
  // How many tracked grants have their node under each parent (see holdsUnder).
  readonly #grantsUnder = new Map<string, number>();
  readonly #listeners = new Set<() => void>();
  // Callers of ready() waiting for a connection, woken by the one 'state' listener of the session.
  readonly #connectWaiters = new Set<() => void>();
  // Told of every (re)connection: held-node watches whose re-arming read failed send it again.
  readonly #connectedListeners = new Set<() => void>();
  #closing: Promise<void> = Promise.resolve();
  // Requests issued in one turn of the event loop leave in one write (see #coalesceWrites).
  readonly #cork = new TurnCork({ firstAtOnce: false });
  // Requests in flight bounded by the request timeout, behind one timer (see #deadlinesFor).
  #deadlines: { readonly timeoutMs: number; readonly ring: RequestDeadlines<PendingRequest<unknown>> } | undefined;
  // What the requests tell the session: an answer proves it alive at the send time.
  readonly #requestHost: RequestHost = {
    answered: (sent, error) => {
      if (error === null) this.#contact(sent);
      else {
        const code = zooKeeperCode(error);
        if (code !== undefined && !NOT_AN_ANSWER.has(code)) this.#contact(sent);
      }
    },
    failure: (error, what) => refusal(zooKeeperCode(error), what, error) ?? error,
  };
  readonly #onState = (state: State): void => this.#stateChanged(state);

  constructor(client: Client, owned: boolean, settings: SessionSettings) {
    this.client = client;
    this.owned = owned;
    this.wire = wireRequestsOn(client);
    this.#settings = settings;
    this.#connectingSince = owned ? monotonicNow() : Number.NEGATIVE_INFINITY;
    this.#timing = settings.timingFor(client.getSessionTimeout());
    client.on('state', this.#onState);
    // Each held lock watches its own node: the client must be able to restore that many watches.
    restoreWatchesInParts(client);
    const current = client.getState();
    // A given client that is already connected: the session is only counted alive from the first
    // request this provider sees answered (ready() sends one), never from an unknown past.
    if (current === State.SYNC_CONNECTED) {
      this.#state = 'connected';
      settings.granted?.(this.#timing);
    } else if (current === State.EXPIRED || current === State.AUTH_FAILED) this.#state = 'dead';
  }

  /** Opens a client of our own on `connectionString` (the caller waits with {@link ready}). */
  static open(connectionString: string, sessionTimeoutMs: number, spinDelayMs: number, settings: SessionSettings): ZooKeeperSession {
    // retries 0: a create the client retried by itself could leave a second contender behind.
    const client = createClient(connectionString, { sessionTimeout: sessionTimeoutMs, spinDelay: spinDelayMs, retries: 0 });
    // Before connect(): the client sends its credentials on every connection, the first included.
    for (const { scheme, credentials } of settings.access.auth) client.addAuthInfo(scheme, Buffer.from(credentials));
    const session = new ZooKeeperSession(client, true, settings);
    client.connect();
    return session;
  }

  /** False once the session expired, was closed, or (for our own client) outlived its deadline. */
  get alive(): boolean {
    // A paused process may ask before the keeper's deadline timer ran: the keeper reads the clock.
    void this.#keeper?.alive;
    return this.#state !== 'dead';
  }

  /** True while the client is connected (requests go out now rather than when it reconnects). */
  get connected(): boolean {
    return this.#state === 'connected';
  }

  /** Why the session ended, once it has. */
  get end(): SessionEnd | undefined {
    return this.#end;
  }

  /** The session timeout the server granted (the requested one until it answered), in ms. */
  get timeoutMs(): number {
    return this.client.getSessionTimeout();
  }

  /** The cadences in use, derived from {@link timeoutMs} at the last connection. */
  get timing(): SessionTiming {
    return this.#timing;
  }

  /** The ACL of every znode this session creates. */
  get acl(): ACL[] {
    return this.#settings.access.acl;
  }

  /** The ZooKeeper session id, as the server stores it in `ephemeralOwner`. */
  get sessionId(): Buffer {
    return this.client.getSessionId();
  }

  /**
   * Until when locks of this session are known valid (monotonic ms): the keeper's deadline (send time
   * of the last answered request + granted timeout − core's drift margin); −∞ before any answer.
   */
  validUntil(): number {
    return this.#keeper?.validUntil ?? Number.NEGATIVE_INFINITY;
  }

  /** True when {@link ready} would resolve at once: connected, with a session the keeper counts alive. */
  get isReady(): boolean {
    return this.#state === 'connected' && this.#keeper?.alive === true;
  }

  /**
   * Resolves once connected with a confirmed session; rejects on abort, or when no connection came by
   * `waitUntil` (monotonic ms) or within the request timeout, whichever is later: an acquire that may
   * wait 30 s waits for a slow (re)connection as it would for the lock, a try fails after one request
   * timeout.
   */
  async ready(signal: AbortLike, waitUntil = Number.NEGATIVE_INFINITY): Promise<void> {
    if (!this.alive) throw this.#deadError();
    if (this.#state === 'connected') {
      if (this.#keeper?.alive === true) return;
      // Connected, but no answer counts yet (a given client), or the last keeper ran out: ask.
      await this.request('checking the ZooKeeper session', (done) => this.client.exists('/', done));
      return;
    }
    const start = monotonicNow();
    const deadline = Math.max(start + this.#timing.requestTimeoutMs, waitUntil);
    const outcome = await waitFor<'connected' | 'dead'>({
      deadline,
      signal,
      until: (wake) => {
        // Not one client listener per waiter: the session's one state listener wakes them all (64
        // acquires at once on a new provider would otherwise pass the emitter's listener limit).
        const onConnected = (): void => wake('connected');
        this.#connectWaiters.add(onConnected);
        const off = this.onChange(() => {
          if (this.#state === 'dead') wake('dead');
        });
        return () => {
          this.#connectWaiters.delete(onConnected);
          off();
        };
      },
    });
    if (!outcome.woken) throw new RequestTimeoutError('connecting to ZooKeeper', Math.round(deadline - start));
    if (outcome.value === 'dead') throw this.#deadError();
  }

  /**
   * Runs one client request with a reply bound (the session's shared deadline ring, see `PendingRequest`). An answer from the
   * server (success or a ZooKeeper error other than connection loss / expiry) tells the keeper the
   * session was alive at the send time. Rejects with `RequestTimeoutError` when no reply arrives in
   * time, with the signal's reason when `options.signal` aborts first (in both cases the request may
   * still be applied: a success answered afterwards goes to `options.late`), or with the client's error.
   */
  request<T>(what: string, run: (done: (error: Error | Exception | null, value: T) => void) => void, options: RequestOptions<T> = {}): Promise<T> {
    if (this.#state === 'dead') return Promise.reject(this.#deadError());
    const { signal, late } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const sent = monotonicNow();
    this.#coalesceWrites();
    const timeoutMs = options.timeoutMs ?? this.#timing.requestTimeoutMs;
    const deadlines = this.#deadlinesFor(timeoutMs);
    const answered = new Promise<T>((resolve, reject) => {
      const pending = new PendingRequest<T>(this.#requestHost, what, sent, timeoutMs, { resolve, reject }, late, signal);
      deadlines?.add(pending as PendingRequest<unknown>);
      try {
        run(pending.done);
      } catch (error) {
        pending.failedToSend(error);
      }
    });
    // A bound other than the request timeout (a keepalive's): a timer of its own.
    return deadlines !== undefined || !Number.isFinite(timeoutMs) ? answered : withRequestTimeout(answered, timeoutMs, what);
  }

  // The shared deadline ring of requests bounded by the request timeout, made anew when a connection
  // brings another timeout (requests in flight keep the ring they were sent with); undefined for any
  // other bound.
  #deadlinesFor(timeoutMs: number): RequestDeadlines<PendingRequest<unknown>> | undefined {
    if (timeoutMs !== this.#timing.requestTimeoutMs || !Number.isFinite(timeoutMs)) return undefined;
    if (this.#deadlines?.timeoutMs !== timeoutMs) {
      this.#deadlines = { timeoutMs, ring: new RequestDeadlines<PendingRequest<unknown>>(timeoutMs, PENDING_DEADLINES) };
    }
    return this.#deadlines.ring;
  }

  /**
   * The children of `path` (GET_CHILDREN2), leaving `watcher` as a child watch when given: encoded by
   * the adapter when it can (see `wire-requests.ts`), else by the client. Use inside {@link request}.
   */
  listChildren(path: string, watcher: ((event: Event) => void) | undefined, callback: (error: Exception | Error | null, children: string[] | undefined) => void): void {
    if (this.wire !== undefined) this.wire.getChildren(path, watcher, callback);
    else if (watcher !== undefined) this.client.getChildren(path, watcher, callback);
    else this.client.getChildren(path, callback);
  }

  /** Deletes `path` at `version` (`-1`: any), encoded as {@link listChildren} is. Use inside {@link request}. */
  removeNode(path: string, version: number, callback: (error: Exception | Error | null) => void): void {
    if (this.wire !== undefined) this.wire.remove(path, version, callback);
    else this.client.remove(path, version, callback);
  }

  /** Sends a keepalive now (sharing one in flight); resolves the new deadline, rejects `LOCK_LOST` when the session is gone. */
  keepAliveNow(): Promise<number> {
    const keeper = this.#keeper;
    if (keeper === undefined || !this.alive) return Promise.reject(this.#lostError());
    return keeper.keepAliveNow();
  }

  /** Tracks a grant: it is renewed, made uncertain, recovered and lost with the session. */
  addGrant(grant: SessionGrant): void {
    const keeper = this.#keeper;
    if (!this.alive || keeper === undefined || !keeper.alive) {
      grant.observer.lost(lockLostError(grant.key, 'session-lost'));
      return;
    }
    const leave = keeper.join({
      lost: (error) => {
        if (!this.#grants.delete(grant)) return;
        this.#countUnder(grant, -1);
        grant.observer.lost(lockLostError(grant.key, 'session-lost', error));
      },
      uncertain: () => grant.observer.uncertain(),
      recovered: () => grant.observer.recovered(),
      renewed: (validUntil) => grant.observer.renewed(validUntil),
    });
    this.#grants.set(grant, leave);
    this.#countUnder(grant, 1);
    if (keeper.uncertain) grant.observer.uncertain();
  }

  /** Stops tracking a grant (released, or its node is gone). */
  removeGrant(grant: SessionGrant): void {
    const leave = this.#grants.get(grant);
    if (leave === undefined) return;
    this.#grants.delete(grant);
    this.#countUnder(grant, -1);
    leave();
  }

  /** True while `grant` is tracked (not released, not lost). */
  hasGrant(grant: SessionGrant): boolean {
    return this.#grants.has(grant);
  }

  /** True while a tracked grant of this session has its node under `parent` (a lock znode we hold a lock of). */
  holdsUnder(parent: string): boolean {
    return this.#grantsUnder.has(parent);
  }

  #countUnder(grant: SessionGrant, delta: 1 | -1): void {
    const parent = grant.nodePath.slice(0, grant.nodePath.lastIndexOf('/'));
    const count = (this.#grantsUnder.get(parent) ?? 0) + delta;
    if (count > 0) this.#grantsUnder.set(parent, count);
    else this.#grantsUnder.delete(parent);
  }

  /**
   * Subscribes to "re-check your state" wake-ups (expiry, loss by deadline, close). A subscriber that
   * comes after the end (a reply read after the deadline timer ended the session, when both waited
   * out the same pause) is woken at once, in a microtask: the end it waits for has already happened.
   */
  onChange(listener: () => void): () => void {
    if (this.#state === 'dead') {
      let subscribed = true;
      queueMicrotask(() => {
        if (subscribed) listener();
      });
      return () => {
        subscribed = false;
      };
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Calls `listener` at every connection of the session to a server (the first, and each reconnection). */
  onConnected(listener: () => void): () => void {
    this.#connectedListeners.add(listener);
    return () => this.#connectedListeners.delete(listener);
  }

  /**
   * Ends the session. For our own client, closes it (the server then deletes its ephemeral nodes)
   * and waits (≤ 2 s) for the close to be acknowledged; a client we were given is left open.
   */
  async close(): Promise<void> {
    this.#die('closed');
    this.client.removeListener('state', this.#onState);
    await this.#closing;
  }

  /** @internal For tests: drops the socket and never reconnects, as a crashed process would (no close). */
  dropConnectionForTesting(): void {
    const manager = this.#manager();
    if (manager === undefined) throw new Error('node-zookeeper-client internals changed: no connectionManager');
    manager.connect = () => undefined;
    manager.socket?.destroy();
  }

  /**
   * Corks the client's socket until the end of this turn of the event loop (core's `TurnCork`):
   * node-zookeeper-client writes each request as it is queued, so without this an acquire's create
   * and the reads behind it, and the requests of many concurrent acquires, each cost a write of
   * their own. Without a socket (not connected) requests queue in the client as usual.
   */
  #coalesceWrites(): void {
    this.#cork.cork(this.#manager()?.socket);
  }

  #manager(): ConnectionManagerInternals | undefined {
    return (this.client as unknown as { connectionManager?: ConnectionManagerInternals }).connectionManager;
  }

  #deadError(): LockError {
    const why: Record<SessionEnd, string> = {
      expired: 'the ZooKeeper session expired',
      deadline: 'the ZooKeeper session outlived its deadline without an answer from the server',
      closed: 'the ZooKeeper session was closed',
      'auth-failed': 'ZooKeeper authentication failed',
    };
    if (this.#end === 'auth-failed') return forbiddenError('ZooKeeper', 'the connection', 'authentication failed (AuthFailed)');
    return new LockError(LockErrorCode.BACKEND_UNAVAILABLE, why[this.#end ?? 'closed']);
  }

  #lostError(): LockError {
    return new LockError(LockErrorCode.LOST, `the ZooKeeper session was lost (${this.#end ?? 'deadline'})`, { reason: 'session-lost' });
  }

  // A request sent at `sent` was answered: the session was alive on the server then.
  #contact(sent: number): void {
    if (this.#state === 'dead') return;
    if (sent > this.#heardAt) this.#heardAt = sent;
    const keeper = this.#keeper;
    if (keeper === undefined || !keeper.alive) {
      // Reading `alive` may have ended it (an owned client's session dies with its keeper). Only an
      // answer to a request sent after the last keeper ended proves the session alive again.
      if (this.alive && sent > this.#keeperEndedAt) this.#openKeeper(sent);
      return;
    }
    if (!keeper.uncertain && sent - this.#reportedSent < keeper.ttlMs * CONTACT_STEP_FRACTION) return;
    this.#reportedSent = Math.max(this.#reportedSent, sent);
    keeper.contact(sent, this.timeoutMs);
  }

  #openKeeper(openedAt: number): void {
    this.#reportedSent = openedAt;
    const keeper: SessionKeeper = new SessionKeeper({
      name: `ZooKeeper session 0x${this.sessionId.toString('hex')}`,
      ttlMs: this.timeoutMs,
      openedAt,
      requestTimeoutMs: this.#timing.requestTimeoutMs,
      keepAlive: (timeoutMs) => this.#keepAlive(timeoutMs),
      ended: (error) => this.#keeperEnded(keeper, error),
    });
    this.#keeper = keeper;
  }

  // The keeper's keepalive: one cheap request the server must answer, bounded by the keeper.
  async #keepAlive(timeoutMs: number): Promise<number> {
    // Nothing to send it on: fail now (the keeper retries soon) rather than queue keepalives in the
    // client, which would send them all at once when it reconnects.
    if (this.#state !== 'connected') throw backendUnavailableError('the ZooKeeper client is not connected', undefined);
    try {
      await this.request('ZooKeeper keepalive', (done) => this.client.exists('/', done), { timeoutMs });
    } catch (error) {
      if (zooKeeperCode(error) === Exception.SESSION_EXPIRED) throw this.#lostError();
      if (error instanceof RequestTimeoutError) this.#checkReadTimeout();
      throw error;
    }
    return this.timeoutMs;
  }

  // After the replies already in the socket were read (this process may have been the one paused,
  // with the answers waiting unread): a server silent for 2/3 of the timeout loses our connection.
  #checkReadTimeout(): void {
    setImmediate(() => {
      if (this.#state !== 'connected') return;
      if (monotonicNow() - this.#heardAt <= this.timeoutMs * READ_TIMEOUT_FRACTION) return;
      this.#manager()?.socket?.destroy();
    });
  }

  #keeperEnded(keeper: SessionKeeper, error: LockError | undefined): void {
    if (this.#keeper !== keeper || error === undefined || this.#state === 'dead') return;
    this.#keeperEndedAt = monotonicNow();
    this.#keeper = undefined;
    if (this.owned) {
      // Like Curator: past the deadline the session counts as lost. Close it, so the server frees its
      // nodes at the latest one session timeout after our last contact, and start a new one next time.
      this.#die(this.client.getState() === State.EXPIRED ? 'expired' : 'deadline');
      return;
    }
    // A client we were given stays open and its session may come back; our grants are lost either
    // way (core frees their nodes through their release once the client can reach the server).
    this.#wake();
  }

  // The client has just read the granted timeout from the server's connect reply: time everything
  // from it, before the first answer of this connection is counted.
  #retime(): void {
    this.#timing = this.#settings.timingFor(this.timeoutMs);
    this.#settings.granted?.(this.#timing);
  }

  #stateChanged(state: State): void {
    if (this.#state === 'dead') return;
    if (state === State.SYNC_CONNECTED || state === State.CONNECTED_READ_ONLY) {
      this.#state = 'connected';
      this.#retime();
      this.#heardAt = monotonicNow();
      // The connect request left after the attempt started, and the server accepted the session.
      this.#contact(this.#connectingSince);
      // As the client's own 'connected' event: a read-only connection cannot take a lock.
      if (state === State.SYNC_CONNECTED) {
        for (const waiter of [...this.#connectWaiters]) waiter();
        for (const listener of [...this.#connectedListeners]) listener();
      }
    } else if (state === State.DISCONNECTED) {
      this.#state = 'disconnected';
      this.#connectingSince = monotonicNow();
      this.#keeper?.suspend();
    } else if (state === State.EXPIRED) {
      this.#die('expired');
    } else if (state === State.AUTH_FAILED) {
      this.#die('auth-failed');
    }
  }

  #die(end: SessionEnd): void {
    if (this.#state === 'dead') return;
    this.#state = 'dead';
    this.#end = end;
    const keeper = this.#keeper;
    this.#keeper = undefined;
    this.#connectedListeners.clear();
    if (end === 'closed') {
      // The provider is closing: core released or abandoned every lock before; what is left hears
      // of the end all the same.
      const left = [...this.#grants.keys()];
      this.#grants.clear();
      this.#grantsUnder.clear();
      keeper?.close();
      for (const grant of left) grant.observer.lost(lockLostError(grant.key, 'session-lost'));
    } else {
      keeper?.lose(
        new LockError(LockErrorCode.LOST, `${keeper.name} ended: ${this.#deadError().message}`, { reason: 'session-lost' }),
      );
      this.#grants.clear();
      this.#grantsUnder.clear();
    }
    if (this.owned && end !== 'expired' && end !== 'auth-failed') this.#closing = this.#closeClient();
    this.#wake();
  }

  /**
   * Closes our own client. Connected: a close request, so the server deletes our nodes at once
   * (waits ≤ 2 s for it). Not connected: node-zookeeper-client cannot send one, and closing it while it
   * connects makes it misread the connect reply (an uncaught exception); so it is stopped from
   * reconnecting instead, and closed properly should a connection already under way complete.
   * The server expires the session on its own otherwise.
   */
  async #closeClient(): Promise<void> {
    const manager = this.#manager();
    const client = this.client;
    if (manager !== undefined && manager.state !== undefined && MANAGER_CONNECTED.has(manager.state)) {
      await waitFor({
        deadline: monotonicNow() + CLOSE_WAIT_MS,
        until: (wake) => {
          client.once('disconnected', wake);
          client.close();
          return () => client.removeListener('disconnected', wake);
        },
      });
      return;
    }
    client.once('connected', () => client.close());
    if (manager !== undefined) {
      manager.connect = () => undefined;
      manager.socket?.destroy();
    }
  }

  #wake(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}
