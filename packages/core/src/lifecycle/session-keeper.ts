import type { GrantObserver } from '../backend.js';
import { monotonicNow } from '../clock.js';
import { LockError, LockErrorCode, isLockError } from '../errors.js';
import { DEFAULT_CLOCK_DRIFT_FACTOR, validityDeadline } from './drift.js';

/** Options of {@link SessionKeeper}. */
export interface SessionKeeperOptions {
  /** What the session is, for messages: `etcd lease 1a2b`, `ZooKeeper session 0x…`. */
  readonly name: string;
  /** The session timeout or lease TTL the backend GRANTED (not the one asked for), in ms. */
  readonly ttlMs: number;
  /** The send time (monotonic ms) of the request that opened the session. */
  readonly openedAt: number;
  /**
   * Sends one keepalive, bounded by `timeoutMs`. Resolves the TTL the backend granted for it in ms
   * (`undefined`: unchanged). Rejects with a `LOCK_LOST` LockError when the backend says the session
   * is gone; any other rejection is a transient failure, retried until the validity runs out.
   */
  readonly keepAlive: (timeoutMs: number) => Promise<number | undefined>;
  /** Bound of one backend request, in ms; a keepalive gets at most this, and never past the session's validity. */
  readonly requestTimeoutMs: number;
  /** @default DEFAULT_CLOCK_DRIFT_FACTOR */
  readonly clockDriftFactor?: number;
  /** Called once when the session ends (lost or closed), after its members heard about it. */
  readonly ended?: (error: LockError | undefined) => void;
}

// Keep alive at a third of the TTL, so that two keepalives can fail before the session runs out.
const KEEPALIVE_FRACTION = 1 / 3;
// A keepalive unanswered for a sixth of the TTL gets company: a second one (often to another member),
// while the first stays in flight. Abandoning it instead would turn a backend that answers slowly
// (under CPU pressure or a write backlog) into a lost session although every answer renews.
const HEDGE_FRACTION = 1 / 6;
const MIN_HEDGE_DELAY_MS = 200;
// Keepalives in flight at once, at most: a backend that does not answer is not sent a flood.
const MAX_KEEPALIVES_IN_FLIGHT = 3;
// After a failed keepalive, retry soon, backing off to a tenth of the TTL, until validity runs out.
const RETRY_INITIAL_MS = 50;
const RETRY_MAX_FRACTION = 1 / 10;

/**
 * The session/lease machine every session backend shares (an etcd lease, a ZooKeeper session, and
 * any later one): keepalive cadence from the GRANTED timeout, a validity deadline from the send time
 * of the last answered request minus the one drift rule, and the fan-out of `uncertain`, `recovered`,
 * `renewed` and `lost` to the grants that live on the session. Its own deadline timer declares the
 * session lost even when the client library stays silent (a paused server, a blackholed link).
 *
 * The adapter reports what only it can see: {@link contact} when any request sent at a given time was
 * answered (which renews the deadline and postpones the next keepalive), {@link suspend} when its
 * connection drops, {@link lose} when the backend says the session is gone.
 */
export class SessionKeeper {
  readonly name: string;
  readonly #options: SessionKeeperOptions;
  readonly #drift: number;
  readonly #members = new Set<GrantObserver>();
  #ttlMs: number;
  #validUntil: number;
  #lastSent: number;
  #state: 'alive' | 'lost' | 'closed' = 'alive';
  #uncertain = false;
  #failures = 0;
  #keepaliveTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  // The latest keepalive in flight (explicit callers share it), and how many are in flight.
  #inFlight: Promise<number> | undefined;
  #inFlightCount = 0;
  // True from a timer-sent keepalive until the next answer: the next beat then means "unanswered".
  #unanswered = false;
  #endError: LockError | undefined;

  constructor(options: SessionKeeperOptions) {
    this.name = options.name;
    this.#options = options;
    this.#drift = options.clockDriftFactor ?? DEFAULT_CLOCK_DRIFT_FACTOR;
    this.#ttlMs = options.ttlMs;
    this.#lastSent = options.openedAt;
    this.#validUntil = validityDeadline(options.openedAt, options.ttlMs, this.#drift);
    this.#armDeadline();
    this.#scheduleKeepalive();
  }

  /** The granted TTL in ms (the latest one the backend reported). */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** Until when grants on this session are known valid (monotonic ms). */
  get validUntil(): number {
    return this.#validUntil;
  }

  /** True while the session is believed alive and its deadline has not passed (read from the clock). */
  get alive(): boolean {
    this.#checkDeadline();
    return this.#state === 'alive';
  }

  /** True between a failed keepalive (or a dropped connection) and the next answered request. */
  get uncertain(): boolean {
    return this.#uncertain;
  }

  /** How many grants live on the session. */
  get size(): number {
    return this.#members.size;
  }

  /** Binds a grant to the session; returns the unbind function. A dead session reports `lost` at once. */
  join(member: GrantObserver): () => void {
    if (!this.alive) {
      member.lost(this.#lostError());
      return () => undefined;
    }
    this.#members.add(member);
    return () => {
      this.#members.delete(member);
    };
  }

  /**
   * A request sent at `sentAt` (monotonic ms) was answered by the backend: the session was alive
   * then. Renews the deadline from that send time (with `grantedTtlMs` when the reply carries one)
   * and postpones the next keepalive. A reply after the deadline never brings the session back.
   */
  contact(sentAt: number, grantedTtlMs?: number): void {
    if (!this.alive) return;
    if (grantedTtlMs !== undefined) this.#ttlMs = grantedTtlMs;
    const validUntil = validityDeadline(sentAt, this.#ttlMs, this.#drift);
    if (sentAt > this.#lastSent) {
      this.#lastSent = sentAt;
      this.#unanswered = false;
      this.#scheduleKeepalive();
    }
    if (validUntil > this.#validUntil) {
      this.#validUntil = validUntil;
      this.#armDeadline();
      for (const member of [...this.#members]) member.renewed(validUntil);
    }
    this.#failures = 0;
    if (this.#uncertain) {
      this.#uncertain = false;
      for (const member of [...this.#members]) member.recovered();
    }
  }

  /** The connection dropped: grants become uncertain until the next answered request or the deadline. */
  suspend(): void {
    if (this.#state !== 'alive' || this.#uncertain) return;
    this.#uncertain = true;
    for (const member of [...this.#members]) member.uncertain();
  }

  /** Sends a keepalive now (sharing one in flight); resolves the new deadline, rejects `LOCK_LOST` when gone. */
  keepAliveNow(): Promise<number> {
    return this.#inFlight ?? this.#send();
  }

  /** The backend said the session is gone (or the adapter gave up on it): every grant hears `lost`. */
  lose(error?: LockError): void {
    if (this.#state !== 'alive') return;
    this.#state = 'lost';
    this.#end(error ?? this.#lostError());
  }

  /** Ends the session without reporting losses (the provider closes, its grants were released). */
  close(): void {
    if (this.#state !== 'alive') return;
    this.#state = 'closed';
    this.#end(undefined);
  }

  // One keepalive, bounded by the validity that remains (and the request timeout): an answer that
  // comes before the deadline renews from its send time, however slow it was.
  #send(): Promise<number> {
    this.#inFlightCount += 1;
    const attempt = this.#keepAlive().finally(() => {
      this.#inFlightCount -= 1;
      if (this.#inFlight === attempt) this.#inFlight = undefined;
    });
    this.#inFlight = attempt;
    return attempt;
  }

  async #keepAlive(): Promise<number> {
    if (!this.alive) throw this.#lostError();
    const sent = monotonicNow();
    const timeoutMs = Math.max(1, Math.min(this.#options.requestTimeoutMs, Math.floor(this.#validUntil - sent)));
    let granted: number | undefined;
    try {
      granted = await this.#options.keepAlive(timeoutMs);
    } catch (error) {
      if (isLockError(error, LockErrorCode.LOST)) this.lose(error);
      throw error;
    }
    this.contact(sent, granted);
    if (!this.alive) throw this.#lostError();
    return this.#validUntil;
  }

  // The next keepalive is due a third of the TTL after the last request that was sent and answered.
  // contact() re-arms this timer, so it fires again only while nothing was answered: then the
  // grants are uncertain, and another keepalive goes out beside the ones still in flight.
  #scheduleKeepalive(delayMs = this.#lastSent + this.#ttlMs * KEEPALIVE_FRACTION - monotonicNow()): void {
    clearTimeout(this.#keepaliveTimer);
    if (this.#state !== 'alive') return;
    this.#keepaliveTimer = setTimeout(() => {
      if (this.#state !== 'alive') return;
      if (this.#unanswered) this.suspend();
      this.#unanswered = true;
      const lastSent = this.#lastSent;
      if (this.#inFlightCount < MAX_KEEPALIVES_IN_FLIGHT) {
        this.#send().catch(() => {
          // A quick failure (refused, unreachable) is retried soon, backing off; a LOST ended it all.
          if (this.#state !== 'alive' || this.#lastSent !== lastSent) return;
          this.suspend();
          const backoff = RETRY_INITIAL_MS * 2 ** Math.min(this.#failures, 10);
          this.#failures += 1;
          this.#scheduleKeepalive(Math.min(backoff, Math.max(RETRY_INITIAL_MS, this.#ttlMs * RETRY_MAX_FRACTION)));
        });
      }
      this.#scheduleKeepalive(Math.max(MIN_HEDGE_DELAY_MS, this.#ttlMs * HEDGE_FRACTION));
    }, Math.max(1, Math.floor(delayMs)));
    // A session must not keep a process alive on its own: the backend frees it when the process ends.
    this.#keepaliveTimer.unref();
  }

  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = setTimeout(() => {
      this.#checkDeadline();
      if (this.#state === 'alive') this.#armDeadline();
    }, Math.max(0, Math.ceil(this.#validUntil - monotonicNow())));
    this.#deadlineTimer.unref();
  }

  // A paused process may read the state before its timers run: compare with the clock.
  #checkDeadline(): void {
    if (this.#state === 'alive' && monotonicNow() >= this.#validUntil) this.lose();
  }

  #end(error: LockError | undefined): void {
    clearTimeout(this.#keepaliveTimer);
    clearTimeout(this.#deadlineTimer);
    this.#endError = error;
    const members = [...this.#members];
    this.#members.clear();
    if (error !== undefined) for (const member of members) member.lost(error);
    this.#options.ended?.(error);
  }

  #lostError(): LockError {
    return (
      this.#endError ??
      new LockError(LockErrorCode.LOST, `${this.name} was lost: its validity ran out before a keepalive was answered`, { reason: 'session-lost' })
    );
  }
}
