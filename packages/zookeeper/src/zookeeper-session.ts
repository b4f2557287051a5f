/**
 * One ZooKeeper session and what fencelock knows about it: the monotonic time of the last request the
 * server answered, the deadline that follows from it, and the grants that live and die with it.
 *
 * Guarantees: `validUntil()` never exceeds (send time of the last answered request) + (negotiated
 * session timeout) − margin, so a lock is never reported valid after the server could have expired its
 * session. node-zookeeper-client has no read timeout (with its server paused it raised no event for
 * 8 s), so this class keeps its own deadline, as Curator does: a cheap heartbeat request renews it, and
 * when it passes every grant is reported lost even if the client stays silent.
 */
import { type GrantObserver, LockError, LockErrorCode, lockLostError, monotonicNow } from '@fencelock/core';
import { type Client, Exception, State, createClient } from 'node-zookeeper-client';
import { NodeWatches } from './node-watches.js';
import type { SessionTiming } from './options.js';

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
}

/** Why a session can no longer be used. */
export type SessionEnd = 'expired' | 'deadline' | 'closed' | 'auth-failed';

/** A request whose reply did not arrive within the operation timeout; it may still be applied later. */
export class ZooKeeperTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no reply from ZooKeeper within ${ms} ms`);
    this.name = 'ZooKeeperTimeoutError';
  }
}

/** The ZooKeeper error code of `error` (e.g. `Exception.NO_NODE`), if it is a ZooKeeper exception. */
export function zooKeeperCode(error: unknown): number | undefined {
  if (error instanceof Exception) return error.code;
  return undefined;
}

// Error codes that are not an answer from the server (so they prove nothing about the session).
const NOT_AN_ANSWER = new Set<number>([Exception.CONNECTION_LOSS, Exception.SESSION_EXPIRED, Exception.AUTH_FAILED]);

interface ConnectionManagerInternals {
  state?: number;
  connect?: () => void;
  socket?: { destroy(): void; cork?: () => void; uncork?: () => void };
}

// node-zookeeper-client's ConnectionManager states that can send requests (CONNECTED, CONNECTED_READ_ONLY).
const MANAGER_CONNECTED = new Set([2, 3]);

/**
 * One node-zookeeper-client session as fencelock tracks it: state, the own deadline, heartbeats, and
 * the grants bound to it. Internal; one per provider at a time (a new one after expiry, for clients
 * the provider opened).
 */
export class ZooKeeperSession {
  /** The client behind the session. */
  readonly client: Client;
  /** True when fencelock opened the client and may close it. */
  readonly owned: boolean;
  /** The session's watches: one watcher function per session, dispatching to the current waiters. */
  readonly watches = new NodeWatches();
  readonly #settings: SessionSettings;
  // Every cadence of the session: from the requested timeout until the server answers, then from
  // the one it granted (a server clamps the request into its own bounds).
  #timing: SessionTiming;
  #state: 'connecting' | 'connected' | 'disconnected' | 'dead' = 'connecting';
  #end: SessionEnd | undefined;
  #lastContact = Number.NEGATIVE_INFINITY;
  #disconnectedAt = 0;
  #uncertain = false;
  readonly #grants = new Set<SessionGrant>();
  readonly #listeners = new Set<() => void>();
  // Callers of ready() waiting for a connection, woken by the one 'state' listener of the session.
  readonly #connectWaiters = new Set<() => void>();
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  // When the armed deadline timer fires (monotonic ms).
  #deadlineAt = Number.POSITIVE_INFINITY;
  // The deadline last passed on to the grants.
  #renewedUntil = Number.NEGATIVE_INFINITY;
  #heartbeatInFlight = false;
  // Silence is counted from here at the earliest (creation, a reconnection, a pause of this process).
  #quietFrom = monotonicNow();
  #heartbeatGeneration = 0;
  #lastTick = monotonicNow();
  #closing: Promise<void> = Promise.resolve();
  // The socket corked for the current turn of the event loop (see #coalesceWrites).
  #corked: { uncork(): void } | undefined;
  readonly #onState = (state: State): void => this.#stateChanged(state);

  constructor(client: Client, owned: boolean, settings: SessionSettings) {
    this.client = client;
    this.owned = owned;
    this.#settings = settings;
    this.#timing = settings.timingFor(client.getSessionTimeout());
    client.on('state', this.#onState);
    const current = client.getState();
    if (current === State.SYNC_CONNECTED) {
      this.#state = 'connected';
      settings.granted?.(this.#timing);
    } else if (current === State.EXPIRED || current === State.AUTH_FAILED) this.#state = 'dead';
    this.#startHeartbeats();
  }

  /** Opens a client of our own on `connectionString` (the caller waits with {@link ready}). */
  static open(connectionString: string, sessionTimeoutMs: number, spinDelayMs: number, settings: SessionSettings): ZooKeeperSession {
    // retries 0: a create the client retried by itself could leave a second contender behind.
    const client = createClient(connectionString, { sessionTimeout: sessionTimeoutMs, spinDelay: spinDelayMs, retries: 0 });
    const session = new ZooKeeperSession(client, true, settings);
    session.#disconnectedAt = monotonicNow();
    client.connect();
    return session;
  }

  /** False once the session expired, was closed, or (for our own client) outlived its deadline. */
  get alive(): boolean {
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

  /** The ZooKeeper session id, as the server stores it in `ephemeralOwner`. */
  get sessionId(): Buffer {
    return this.client.getSessionId();
  }

  /**
   * Until when locks of this session are known valid (monotonic ms): the send time of the last
   * answered request plus the session timeout, minus 2 % + 10 ms for timer and clock-rate slack.
   */
  validUntil(): number {
    const timeout = this.timeoutMs;
    return this.#lastContact + timeout - Math.ceil(timeout * 0.02) - 10;
  }

  /** Resolves once connected with a confirmed session; rejects after the operation timeout or on abort. */
  async ready(signal: AbortSignal): Promise<void> {
    if (this.#state === 'dead') throw this.#deadError();
    if (this.#state === 'connected' && monotonicNow() < this.validUntil()) return;
    if (this.#state === 'connected') {
      await this.request('checking the ZooKeeper session', (done) => this.client.exists('/', done));
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const finish = (error?: unknown): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        unsubscribe();
        this.#connectWaiters.delete(onConnected);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onAbort = (): void => finish(signal.reason);
      const onConnected = (): void => finish();
      const unsubscribe = this.onChange(() => {
        if (this.#state === 'dead') finish(this.#deadError());
      });
      const timer = setTimeout(
        () => finish(new ZooKeeperTimeoutError('connecting to ZooKeeper', this.#timing.operationTimeoutMs)),
        this.#timing.operationTimeoutMs,
      );
      if (signal.aborted) return finish(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      // Not one client listener per waiter: the session's one state listener wakes them all (64
      // acquires at once on a new provider would otherwise pass the emitter's listener limit).
      this.#connectWaiters.add(onConnected);
    });
  }

  /**
   * Runs one client request with a reply bound. An answer from the server (success or a ZooKeeper
   * error other than connection loss / expiry) renews the session deadline from the send time.
   * Rejects with {@link ZooKeeperTimeoutError} when no reply arrives in time, with the signal's reason
   * when `options.signal` aborts first (in both cases the request may still be applied: a success
   * answered afterwards goes to `options.late`), or with the client's error.
   */
  request<T>(
    what: string,
    run: (done: (error: Error | Exception | null, value: T) => void) => void,
    options: { readonly late?: (value: T) => void; readonly signal?: AbortSignal } = {},
  ): Promise<T> {
    if (this.#state === 'dead') return Promise.reject(this.#deadError());
    const { signal, late } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const sent = monotonicNow();
    this.#coalesceWrites();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const giveUp = (reason: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(reason);
      };
      const onAbort = (): void => giveUp(signal?.reason);
      const { operationTimeoutMs } = this.#timing;
      const timer = setTimeout(() => giveUp(new ZooKeeperTimeoutError(what, operationTimeoutMs)), operationTimeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        run((error, value) => {
          const code = zooKeeperCode(error);
          if (error === null || (code !== undefined && !NOT_AN_ANSWER.has(code))) this.#contact(sent);
          if (settled) {
            // Answered after we gave up on it: let the caller undo what it did (a late create).
            if (error === null) late?.(value);
            return;
          }
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if (error === null) resolve(value);
          else reject(error);
        });
      } catch (error) {
        giveUp(error);
      }
    });
  }

  /** Tracks a grant: it is renewed, made uncertain, recovered and lost with the session. */
  addGrant(grant: SessionGrant): void {
    if (this.#state === 'dead') {
      grant.observer.lost(lockLostError(grant.key, 'session-lost'));
      return;
    }
    this.#grants.add(grant);
    if (this.#uncertain) grant.observer.uncertain();
  }

  /** Stops tracking a grant (released). */
  removeGrant(grant: SessionGrant): void {
    this.#grants.delete(grant);
  }

  /** True while `grant` is tracked (not released, not lost). */
  hasGrant(grant: SessionGrant): boolean {
    return this.#grants.has(grant);
  }

  /** Subscribes to "re-check your state" wake-ups (expiry, loss by deadline, close). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
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
   * Corks the client's socket until the end of this turn of the event loop, so that every request
   * issued meanwhile (an acquire's create and the reads behind it; the requests of many concurrent
   * acquires) leaves in one write: one system call and one segment for the server to wake up for,
   * instead of one per request. Order is unchanged; node-zookeeper-client writes each request as
   * it is queued, so without this each costs a write of its own. Without a socket (not connected)
   * requests queue in the client as usual.
   */
  #coalesceWrites(): void {
    if (this.#corked !== undefined) return;
    const socket = this.#manager()?.socket;
    if (socket === undefined || typeof socket.cork !== 'function' || typeof socket.uncork !== 'function') return;
    socket.cork();
    const corked = { uncork: () => socket.uncork?.() };
    this.#corked = corked;
    process.nextTick(() => {
      this.#corked = undefined;
      corked.uncork();
    });
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
    return new LockError(LockErrorCode.BACKEND_UNAVAILABLE, why[this.#end ?? 'closed']);
  }

  #contact(sent: number): void {
    if (this.#state === 'dead' || sent <= this.#lastContact) return;
    this.#lastContact = sent;
    const validUntil = this.validUntil();
    // Every answer moves the deadline later: a timer armed for an earlier moment re-arms itself when
    // it fires (#deadlinePassed), so it is only re-armed here when none is armed or it would fire too
    // late (a smaller timeout negotiated) — not once per answer.
    if (this.#deadlineTimer === undefined || validUntil < this.#deadlineAt) this.#armDeadline(validUntil);
    const recovered = this.#uncertain && this.#state === 'connected';
    if (recovered) this.#uncertain = false;
    // Grants hear of a renewal once it moved their deadline by a quarter heartbeat (each heartbeat
    // does): not on every answer, which would re-arm every held handle's timers per request (64 held
    // locks, 4 requests per acquisition). Their deadline then lags the session's by less than that
    // step, on the safe side, within the heartbeat resolution the capabilities announce.
    if (!recovered && validUntil - this.#renewedUntil < this.#timing.heartbeatIntervalMs / 4) return;
    this.#renewedUntil = validUntil;
    for (const grant of this.#grants) {
      grant.observer.renewed(validUntil);
      if (recovered) grant.observer.recovered();
    }
  }

  #armDeadline(validUntil: number): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineAt = validUntil;
    this.#deadlineTimer = setTimeout(() => this.#deadlinePassed(), Math.max(0, Math.ceil(validUntil - monotonicNow())));
    this.#deadlineTimer.unref();
  }

  #deadlinePassed(): void {
    this.#deadlineTimer = undefined;
    if (this.#state === 'dead') return;
    const validUntil = this.validUntil();
    if (monotonicNow() < validUntil) return this.#armDeadline(validUntil);
    if (this.owned) {
      // Like Curator: past the deadline the session counts as lost. Close it, so the server frees its
      // nodes at the latest one session timeout after our last contact, and start a new one next time.
      this.#die('deadline');
      return;
    }
    // A client we were given stays open; its session may come back. Our grants are lost either way:
    // delete their nodes when (if) the connection returns, so the lock does not stay blocked.
    const grants = [...this.#grants];
    this.#grants.clear();
    for (const grant of grants) {
      grant.observer.lost(lockLostError(grant.key, 'session-lost'));
      this.client.remove(grant.nodePath, -1, () => undefined);
    }
    this.#wake();
  }

  #startHeartbeats(): void {
    clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = setInterval(() => this.#heartbeat(), this.#timing.heartbeatIntervalMs);
    this.#heartbeatTimer.unref();
  }

  // The client has just read the granted timeout from the server's connect reply: time everything
  // from it, before the first contact of this connection is counted.
  #retime(): void {
    const timing = this.#settings.timingFor(this.timeoutMs);
    const cadenceChanged = timing.heartbeatIntervalMs !== this.#timing.heartbeatIntervalMs;
    this.#timing = timing;
    if (cadenceChanged) {
      this.#lastTick = monotonicNow();
      this.#startHeartbeats();
    }
    this.#settings.granted?.(timing);
  }

  #heartbeat(): void {
    const now = monotonicNow();
    // A tick far later than scheduled means this process was paused, not the server: replies may be
    // waiting unread in the socket. Do not count the pause as server silence.
    if (now - this.#lastTick > this.#timing.heartbeatIntervalMs * 2) this.#quietFrom = now;
    this.#lastTick = now;
    if (this.#state !== 'connected') return;
    // The Java client's read timeout: no answer for 2/3 of the session timeout means the server went
    // silent (paused, partitioned). Drop the socket so the client moves to another server — counted
    // from the last answer, so it happens (and handles turn uncertain) before the deadline passes.
    const silentMs = now - Math.max(this.#lastContact, this.#quietFrom);
    if (this.#heartbeatInFlight && silentMs > (this.timeoutMs * 2) / 3) {
      this.#heartbeatInFlight = false;
      this.#manager()?.socket?.destroy();
      return;
    }
    if (this.#heartbeatInFlight) return;
    this.#heartbeatInFlight = true;
    const generation = ++this.#heartbeatGeneration;
    this.request('ZooKeeper heartbeat', (done) => this.client.exists('/', done))
      .catch(() => undefined)
      .finally(() => {
        if (this.#heartbeatGeneration === generation) this.#heartbeatInFlight = false;
      });
  }

  #stateChanged(state: State): void {
    if (this.#state === 'dead') return;
    if (state === State.SYNC_CONNECTED || state === State.CONNECTED_READ_ONLY) {
      this.#state = 'connected';
      this.#retime();
      this.#heartbeatInFlight = false;
      this.#heartbeatGeneration += 1;
      this.#quietFrom = monotonicNow();
      // The connect request left after we saw the disconnection, and the server accepted the session.
      this.#contact(this.#disconnectedAt);
      this.#heartbeat();
      // As the client's own 'connected' event: a read-only connection cannot take a lock.
      if (state === State.SYNC_CONNECTED) for (const waiter of [...this.#connectWaiters]) waiter();
    } else if (state === State.DISCONNECTED) {
      this.#state = 'disconnected';
      this.#disconnectedAt = monotonicNow();
      if (!this.#uncertain) {
        this.#uncertain = true;
        for (const grant of this.#grants) grant.observer.uncertain();
      }
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
    clearInterval(this.#heartbeatTimer);
    clearTimeout(this.#deadlineTimer);
    const grants = [...this.#grants];
    this.#grants.clear();
    for (const grant of grants) grant.observer.lost(lockLostError(grant.key, 'session-lost'));
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
  #closeClient(): Promise<void> {
    const manager = this.#manager();
    if (manager !== undefined && manager.state !== undefined && MANAGER_CONNECTED.has(manager.state)) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, 2_000);
        const client = this.client;
        function done(): void {
          clearTimeout(timer);
          client.removeListener('disconnected', done);
          resolve();
        }
        client.once('disconnected', done);
        client.close();
      });
    }
    this.client.once('connected', () => this.client.close());
    if (manager !== undefined) {
      manager.connect = () => undefined;
      manager.socket?.destroy();
    }
    return Promise.resolve();
  }

  #wake(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}
