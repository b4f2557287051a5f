import { randomBytes } from 'node:crypto';
import { type GrantObserver, LockError, LockErrorCode, SessionKeeper, driftMarginMs, forbiddenError, monotonicNow } from '@fencelock/core/adapter';
import { EtcdLeaseInvalidError } from 'etcd3';
import type { EtcdCalls } from './etcd-calls.js';
import { asRefusal } from './refusals.js';

/** Hands core a revoke of a lease whose grant may have been applied unseen (see `BackendAcquireRequest.releaseLater`). */
export type ReleaseLater = (release: () => Promise<unknown>, until: number) => void;

// Not a retry on failure: we choose lease ids ourselves (so that a grant whose reply was lost can
// still be revoked), and only a collision with an id etcd already knows earns another, fresh id.
const GRANT_ATTEMPTS = 3;

/** A random positive int64 lease id, as etcd's decimal string. */
function randomLeaseId(): string {
  const bytes = randomBytes(8);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  const id = bytes.readBigUInt64BE(0);
  return (id === 0n ? 1n : id).toString();
}

/** Revokes lease `id`; resolves once etcd answered, "no such lease" included. */
async function revoke(calls: EtcdCalls, id: string): Promise<void> {
  try {
    await calls.leaseRevoke(id);
  } catch (error) {
    if (!(error instanceof EtcdLeaseInvalidError)) throw error;
  }
}

/**
 * One etcd lease per provider session: what only etcd needs (choosing the lease id, granting,
 * revoking, the waiter-key names in use on the lease) around core's {@link SessionKeeper}, which
 * keeps the lease alive at a cadence from the TTL etcd GRANTED (etcd silently raises a requested 1 s
 * to 2 s), computes validity from the send time of the last answered keepalive with core's drift
 * rule, fans `uncertain`/`recovered`/`renewed`/`lost` out to the locks on the lease, and declares it
 * lost by its own deadline even when the client library stays silent. A lost lease is revoked (best
 * effort) so that its waiter keys stop blocking others as soon as possible.
 */
export class LeaseSession {
  /** The lease id, decimal (as etcd3 takes it). */
  readonly id: string;
  /** The lease id in lowercase hex without padding: the waiter key suffix etcd's Go Mutex uses. */
  readonly hex: string;
  readonly #calls: EtcdCalls;
  readonly #keeper: SessionKeeper;
  // Waiter key names in use on this lease (held, waiting, or still being deleted): a second
  // acquisition of the same lock on this session must never reuse or overwrite the first one's key.
  readonly #names = new Set<string>();
  #closed = false;

  private constructor(calls: EtcdCalls, id: string, ttlMs: number, sentAt: number, requestTimeoutMs: number, onEnd: (session: LeaseSession) => void) {
    this.#calls = calls;
    this.id = id;
    this.hex = BigInt(id).toString(16);
    this.#keeper = new SessionKeeper({
      name: `etcd lease ${this.hex}`,
      ttlMs,
      openedAt: sentAt,
      requestTimeoutMs,
      keepAlive: async (timeoutMs) => {
        const ttlSeconds = await calls.leaseKeepAliveOnce(id, timeoutMs);
        // etcd answers a keepalive for a lease it no longer knows with TTL 0.
        if (ttlSeconds <= 0) {
          throw new LockError(LockErrorCode.LOST, `etcd lease ${this.hex} was lost: etcd no longer knows it`, { reason: 'session-lost' });
        }
        return ttlSeconds * 1000;
      },
      ended: (error) => {
        onEnd(this);
        // We no longer keep it alive; revoking frees its keys now instead of at its expiry.
        if (error !== undefined) void revoke(calls, id).catch(() => undefined);
      },
    });
  }

  /**
   * Grants a lease with an id we choose, so that a grant whose reply was lost can still be revoked:
   * that revoke is handed to `releaseLater` (core retries it until the lease would have expired).
   * @param ttlSeconds whole seconds (etcd's resolution), at least 2.
   */
  static async open(
    calls: EtcdCalls,
    ttlSeconds: number,
    requestTimeoutMs: number,
    releaseLater: ReleaseLater,
    onEnd: (session: LeaseSession) => void,
  ): Promise<LeaseSession> {
    let lastError: unknown;
    for (let attempt = 0; attempt < GRANT_ATTEMPTS; attempt += 1) {
      const id = randomLeaseId();
      const sentAt = monotonicNow();
      try {
        const granted = await calls.leaseGrant(id, ttlSeconds);
        return new LeaseSession(calls, id, granted.ttlSeconds * 1000, sentAt, requestTimeoutMs, onEnd);
      } catch (error) {
        // Refused to this identity (authentication failed, or no role): nothing was granted.
        const refused = asRefusal(error, 'granting the session lease');
        if (refused !== error) throw refused;
        const problem = await calls.certificateProblem(error);
        if (problem !== undefined) throw forbiddenError('etcd', 'the TLS connection', problem, error);
        lastError = error;
        // A collision: the lease is someone else's, never ours to revoke. Try another id.
        if (error instanceof Error && /already exists/i.test(error.message)) continue;
        // The grant may have been applied although we saw no reply. Unkept, it expires a TTL after
        // etcd applied it; past that (and etcd's clock running ahead of ours) there is nothing to revoke.
        const ttlMs = ttlSeconds * 1000;
        releaseLater(() => revoke(calls, id), monotonicNow() + ttlMs + driftMarginMs(ttlMs));
        throw error;
      }
    }
    throw lastError;
  }

  /** The TTL etcd granted, in ms (the latest one a keepalive reported). */
  get ttlMs(): number {
    return this.#keeper.ttlMs;
  }

  /** The monotonic deadline (ms) until which the lease is known valid. */
  get validUntil(): number {
    return this.#keeper.validUntil;
  }

  /** True while the lease is believed alive and its validity has not run out (checked on the clock). */
  get alive(): boolean {
    return this.#keeper.alive;
  }

  /** Binds a lock (held or waiting) to the lease; returns the unbind function. A dead lease reports `lost` at once. */
  join(member: GrantObserver): () => void {
    return this.#keeper.join(member);
  }

  /** Reserves a waiter key name under `base` (the plain `<lock>/<lease hex>` when free, else a suffixed one). */
  claimName(base: string): string {
    let name = base;
    for (let suffix = 1; this.#names.has(name); suffix += 1) name = `${base}_${suffix}`;
    this.#names.add(name);
    return name;
  }

  /** Frees a name once its key is known deleted (or gone with the lease). */
  releaseName(name: string): void {
    this.#names.delete(name);
  }

  /**
   * Sends one keepalive now (sharing one already in flight) and resolves the new validity deadline.
   * Rejects with `LOCK_LOST` when the lease is gone.
   */
  keepAlive(): Promise<number> {
    return this.#keeper.keepAliveNow();
  }

  /** Stops the keepalives and revokes the lease, deleting every key it carries. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const wasAlive = this.#keeper.alive;
    this.#keeper.close();
    if (wasAlive) await revoke(this.#calls, this.id).catch(() => undefined);
  }

  /** Gives up on the lease: members hear `lost`, the lease is revoked in the background. */
  abandon(): void {
    this.#keeper.lose();
  }
}
