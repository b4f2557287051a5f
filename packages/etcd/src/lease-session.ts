import { randomBytes } from 'node:crypto';
import { LockError, LockErrorCode, monotonicNow } from '@fencelock/core';
import type { EtcdCalls } from './etcd-calls.js';

/** What a lock (held or waiting) on a session wants to hear about it. */
export interface SessionMember {
  /** The lease is gone, or we gave up on it because keepalives failed until its validity ran out. */
  lost(): void;
  /** A keepalive failed; the lease may still be valid until `validUntil`. */
  uncertain?(): void;
  /** A keepalive succeeded again after failures. */
  recovered?(): void;
  /** A keepalive succeeded: the new monotonic deadline. */
  renewed?(validUntil: number): void;
}

// Keep alive at a third of the TTL, as etcd's Go client does: two keepalives can fail before expiry.
const KEEPALIVE_FRACTION = 1 / 3;
// A keepalive gets at most this share of the TTL before we give up on it and send another: etcd3
// picks a random member per request, and one sent to a dead or partitioned member would otherwise
// hang for the whole request timeout while the lease runs out.
const KEEPALIVE_TIMEOUT_FRACTION = 1 / 6;
const MIN_KEEPALIVE_TIMEOUT_MS = 200;
// After a failed keepalive, retry soon (a different member, likely), backing off up to a tenth of
// the TTL, until the validity runs out.
const KEEPALIVE_RETRY_MS = 50;
const KEEPALIVE_RETRY_MAX_FRACTION = 1 / 10;
const GRANT_ATTEMPTS = 3;

/** A random positive int64 lease id, as etcd's decimal string. */
function randomLeaseId(): string {
  const bytes = randomBytes(8);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  const id = bytes.readBigUInt64BE(0);
  return (id === 0n ? 1n : id).toString();
}

/**
 * One etcd lease per provider session, kept alive by our own keepalive loop (not etcd3's `Lease`,
 * which tracks time with `Date.now()` and the reply time). Validity is computed from the SEND time
 * of the grant or keepalive that etcd acknowledged plus the TTL etcd GRANTED (etcd silently raises
 * a requested 1 s to 2 s), on the monotonic clock. When keepalives fail until that deadline the
 * session declares itself lost even if the client never reports an error — etcd may still keep the
 * lease for a moment, but no holder may act on it any more. A lost session is revoked (best effort)
 * so that its waiter keys stop blocking others as soon as possible.
 */
export class LeaseSession {
  /** The lease id, decimal (as etcd3 takes it). */
  readonly id: string;
  /** The lease id in lowercase hex without padding: the waiter key suffix etcd's Go Mutex uses. */
  readonly hex: string;
  /** The TTL etcd granted, in ms. */
  readonly ttlMs: number;
  readonly #calls: EtcdCalls;
  readonly #keepaliveTimeoutMs: number;
  readonly #onEnd: (session: LeaseSession) => void;
  readonly #members = new Set<SessionMember>();
  // Waiter key names in use on this lease (held, waiting, or still being deleted): a second
  // acquisition of the same lock on this session must never reuse or overwrite the first one's key.
  readonly #names = new Set<string>();
  #validUntil: number;
  #state: 'alive' | 'lost' | 'closed' = 'alive';
  #failing = false;
  #failures = 0;
  #keepaliveTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #inFlight: Promise<number> | undefined;

  private constructor(calls: EtcdCalls, id: string, ttlMs: number, validUntil: number, onEnd: (session: LeaseSession) => void) {
    this.#calls = calls;
    this.id = id;
    this.hex = BigInt(id).toString(16);
    this.ttlMs = ttlMs;
    this.#keepaliveTimeoutMs = Math.max(MIN_KEEPALIVE_TIMEOUT_MS, Math.floor(ttlMs * KEEPALIVE_TIMEOUT_FRACTION));
    this.#validUntil = validUntil;
    this.#onEnd = onEnd;
    this.#armDeadline();
    this.#scheduleKeepalive(ttlMs * KEEPALIVE_FRACTION);
  }

  /**
   * Grants a lease with an id we choose, so that a grant whose reply was lost can still be revoked.
   * @param ttlSeconds whole seconds (etcd's resolution), at least 2.
   */
  static async open(calls: EtcdCalls, ttlSeconds: number, onEnd: (session: LeaseSession) => void): Promise<LeaseSession> {
    let lastError: unknown;
    for (let attempt = 0; attempt < GRANT_ATTEMPTS; attempt += 1) {
      const id = randomLeaseId();
      const sent = monotonicNow();
      try {
        const granted = await calls.leaseGrant(id, ttlSeconds);
        const ttlMs = granted.ttlSeconds * 1000;
        return new LeaseSession(calls, id, ttlMs, sent + ttlMs, onEnd);
      } catch (error) {
        lastError = error;
        // The grant may have been applied although we saw no reply: revoke what we may have made.
        calls.leaseRevoke(id).catch(() => undefined);
        // Only an id collision ("lease already exists") is worth another id; anything else is reported.
        if (!(error instanceof Error) || !/already exists/i.test(error.message)) throw error;
      }
    }
    throw lastError;
  }

  /** The monotonic deadline (ms) until which the lease is known valid. */
  get validUntil(): number {
    return this.#validUntil;
  }

  /** True while the lease is believed alive and its validity has not run out (checked on the clock). */
  get alive(): boolean {
    if (this.#state === 'alive' && monotonicNow() >= this.#validUntil) this.#declareLost();
    return this.#state === 'alive';
  }

  /** Subscribes a lock to the session; returns the unsubscribe function. A dead session reports `lost` at once. */
  join(member: SessionMember): () => void {
    if (!this.alive) {
      member.lost();
      return () => undefined;
    }
    this.#members.add(member);
    return () => {
      this.#members.delete(member);
    };
  }

  /** Reserves a waiter key name under `base` (the plain `<lock>/<lease hex>` when free, else a suffixed one). */
  claimName(base: string): string {
    let name = base;
    for (let suffix = 1; this.#names.has(name); suffix += 1) name = `${base}_${suffix}`;
    this.#names.add(name);
    return name;
  }

  /** Frees a name once its key is known deleted. */
  releaseName(name: string): void {
    this.#names.delete(name);
  }

  /**
   * Sends one keepalive now (sharing one already in flight) and resolves the new validity deadline:
   * the send time plus the granted TTL. Rejects with `LOCK_LOST` when the lease is gone.
   */
  keepAlive(): Promise<number> {
    this.#inFlight ??= this.#keepAlive().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  /** Stops the keepalives and revokes the lease, deleting every key it carries. Idempotent. */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const wasAlive = this.#state === 'alive';
    this.#state = 'closed';
    this.#clearTimers();
    this.#members.clear();
    this.#onEnd(this);
    if (wasAlive) await this.#calls.leaseRevoke(this.id).catch(() => undefined);
  }

  /** Gives up on the lease: members hear `lost`, the lease is revoked in the background. */
  abandon(): void {
    this.#declareLost();
  }

  async #keepAlive(): Promise<number> {
    if (!this.alive) throw this.#lostError();
    const sent = monotonicNow();
    const ttlSeconds = await this.#calls.leaseKeepAliveOnce(this.id, this.#keepaliveTimeoutMs);
    if (ttlSeconds <= 0) {
      this.#declareLost();
      throw this.#lostError();
    }
    // A reply after our validity ran out (a pause in between) never brings the session back.
    if (!this.alive) throw this.#lostError();
    const validUntil = sent + ttlSeconds * 1000;
    if (validUntil > this.#validUntil) {
      this.#validUntil = validUntil;
      this.#armDeadline();
    }
    if (this.#failing) {
      this.#failing = false;
      for (const member of [...this.#members]) member.recovered?.();
    }
    for (const member of [...this.#members]) member.renewed?.(this.#validUntil);
    return this.#validUntil;
  }

  #scheduleKeepalive(delayMs: number): void {
    clearTimeout(this.#keepaliveTimer);
    if (this.#state !== 'alive') return;
    this.#keepaliveTimer = setTimeout(() => {
      this.keepAlive().then(
        () => {
          this.#failures = 0;
          this.#scheduleKeepalive(this.ttlMs * KEEPALIVE_FRACTION);
        },
        () => {
          if (this.#state !== 'alive') return;
          if (!this.#failing) {
            this.#failing = true;
            for (const member of [...this.#members]) member.uncertain?.();
          }
          const backoff = KEEPALIVE_RETRY_MS * 2 ** Math.min(this.#failures, 10);
          this.#failures += 1;
          this.#scheduleKeepalive(Math.min(backoff, Math.max(KEEPALIVE_RETRY_MS, this.ttlMs * KEEPALIVE_RETRY_MAX_FRACTION)));
        },
      );
    }, Math.max(1, Math.floor(delayMs)));
    // The lease must not keep a process alive on its own: etcd frees it when the process ends.
    this.#keepaliveTimer.unref();
  }

  // Our own deadline: fires at the validity end even if the client never reports a failure.
  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    const delay = Math.max(0, Math.ceil(this.#validUntil - monotonicNow()));
    this.#deadlineTimer = setTimeout(() => {
      if (this.#state !== 'alive') return;
      if (monotonicNow() >= this.#validUntil) this.#declareLost();
      else this.#armDeadline();
    }, delay);
    this.#deadlineTimer.unref();
  }

  #declareLost(): void {
    if (this.#state !== 'alive') return;
    this.#state = 'lost';
    this.#clearTimers();
    const members = [...this.#members];
    this.#members.clear();
    this.#onEnd(this);
    for (const member of members) member.lost();
    // We no longer keep it alive; revoking frees its keys now instead of at its expiry.
    this.#calls.leaseRevoke(this.id).catch(() => undefined);
  }

  #clearTimers(): void {
    clearTimeout(this.#keepaliveTimer);
    clearTimeout(this.#deadlineTimer);
  }

  #lostError(): LockError {
    return new LockError(LockErrorCode.LOST, `etcd lease ${this.hex} was lost`, { reason: 'session-lost' });
  }
}
