import { monotonicNow } from '@fencelock/core/adapter';
import { MAX_EXTEND_BATCH } from '@fencelock/redis-shared';
import type { ExtendTarget, MasterNode, NodeReply } from './master-node.js';
import { type RoundTally, tally } from './node-outcomes.js';
import { quorumOf, remainingValidityMs, roundValidUntil } from './quorum.js';

/** How one lock's extend round ended. */
export type ExtendRound =
  /** A majority extended within the old validity: the new deadline. */
  | { readonly kind: 'extended'; readonly validUntil: number }
  /** So many masters said "not yours" that a majority can never be ours again: the lock is lost. */
  | { readonly kind: 'lost'; readonly tally: RoundTally }
  /** The old validity ran out before a majority confirmed. */
  | { readonly kind: 'expired'; readonly tally: RoundTally }
  /** No majority, because masters failed or the round was too slow: try again while still valid. */
  | { readonly kind: 'failed'; readonly tally: RoundTally };

/** One lock to extend: its key and value, the new TTL, its current deadline and request bound. */
export interface ExtendRequest extends ExtendTarget {
  /** The lock's current validity deadline (monotonic ms): a majority confirmed after it is too late. */
  readonly validUntil: number;
  /** How long the request to one master may take. */
  readonly requestTimeoutMs: number;
}

interface Pending {
  readonly request: ExtendRequest;
  readonly resolve: (round: ExtendRound) => void;
}

/**
 * Redlock extension rounds: the owner-checked extend script (`PEXPIRE` only while the key holds our
 * value, never `SET`) on ALL masters in parallel, each bounded by the per-node timeout.
 * Extended iff a majority extended AND the round finished before the current `validUntil` AND
 * `ttl − elapsed − drift > 0`; the new deadline counts from the round's SEND time:
 * `start + ttl − drift` (core's `validityDeadline`, as for acquire; never from the reply).
 * A failed round changes nothing: masters that did extend keep a longer TTL, which only delays
 * expiry of a key nobody else can take while we hold a majority.
 *
 * The extensions asked for in one turn of the event loop (core runs the renewals that are due
 * together) share their rounds: one script call per master for up to `MAX_EXTEND_BATCH` locks, and
 * one promise per lock. A service holding ten thousand locks renews them with a few dozen requests a
 * second and without ten thousand times N promises, timers and replies to collect — the client's
 * CPU is what gives out first on a loaded machine.
 */
export class ExtendRounds {
  readonly #masters: readonly MasterNode[];
  readonly #quorum: number;
  readonly #clockDriftFactor: number;
  #pending: Pending[] = [];

  constructor(masters: readonly MasterNode[], clockDriftFactor: number) {
    this.#masters = masters;
    this.#quorum = quorumOf(masters.length);
    this.#clockDriftFactor = clockDriftFactor;
  }

  /** One extend round for one lock, sent with the other extensions asked for in this turn. Never rejects. */
  extend(request: ExtendRequest): Promise<ExtendRound> {
    return new Promise((resolve) => {
      if (this.#pending.length === 0) setImmediate(() => this.#flush());
      this.#pending.push({ request, resolve });
    });
  }

  #flush(): void {
    const pending = this.#pending;
    this.#pending = [];
    for (let start = 0; start < pending.length; start += MAX_EXTEND_BATCH) void this.#round(pending.slice(start, start + MAX_EXTEND_BATCH));
  }

  async #round(batch: readonly Pending[]): Promise<void> {
    const targets = batch.map((entry) => entry.request);
    const timeoutMs = targets.reduce((longest, target) => Math.max(longest, target.requestTimeoutMs), 0);
    const start = monotonicNow();
    const replies = await Promise.all(this.#masters.map((m) => m.extendMany(targets, timeoutMs)));
    const now = monotonicNow();
    batch.forEach(({ request, resolve }, index) => resolve(this.#decide(request, replies, index, start, now)));
  }

  #decide(request: ExtendRequest, replies: readonly NodeReply<boolean[]>[], index: number, start: number, now: number): ExtendRound {
    let succeeded = 0;
    for (const reply of replies) if (reply.ok && reply.value[index] === true) succeeded += 1;
    const validityMs = remainingValidityMs(request.ttlMs, now - start, this.#clockDriftFactor);
    if (succeeded >= this.#quorum && validityMs > 0 && now < request.validUntil) {
      return { kind: 'extended', validUntil: roundValidUntil(start, request.ttlMs, this.#clockDriftFactor) };
    }
    // The rare outcomes get the full per-master account (for the error's `nodes`).
    const counted = tally(
      this.#masters,
      replies.map((reply): NodeReply<boolean> => (reply.ok ? { ok: true, value: reply.value[index] === true } : reply)),
    );
    if (this.#masters.length - counted.refused < this.#quorum) return { kind: 'lost', tally: counted };
    if (now >= request.validUntil) return { kind: 'expired', tally: counted };
    return { kind: 'failed', tally: counted };
  }
}
