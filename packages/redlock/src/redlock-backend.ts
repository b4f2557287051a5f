import {
  type BackendAcquireRequest,
  type BackendCampaignRequest,
  type BackendGrant,
  type BackendWarning,
  type GrantObserver,
  type LeaderInfo,
  type LockBackend,
  type LockHolder,
  type LockInfo,
  lockLostError,
  monotonicNow,
  normalizeCapabilities,
  DEFAULT_RETRY,
  KeyCache,
  waitForGrant,
} from '@fencelock/core/adapter';
import { MutexElections, lineMember, mergeEvictionWarnings } from '@fencelock/redis-shared';
import { redlockElectionKeys } from './election-keys.js';
import { type AcquireRound, type MasterCopy, acquireRound } from './acquire-round.js';
import { ExtendRounds } from './extend-round.js';
import { type RedlockKeys, redlockKeys } from './lock-keys.js';
import { decodeLockValue, encodeLockValue } from './lock-value.js';
import type { MasterNode } from './master-node.js';
import { tally } from './node-outcomes.js';
import { REDLOCK_MIN_TTL_MS, type ResolvedRedlockOptions, extendTimeoutFor, requestTimeoutFor } from './options.js';
import { quorumOf } from './quorum.js';
import { conflictingQuorumError, quorumNotReachedError, refusedQuorumError, validityExhaustedError } from './redlock-errors.js';
import { ReleaseListener } from './release-listener.js';
import { MastersRelease } from './release-round.js';
import { announcementHead } from './redlock-scripts.js';
import { Stragglers, voteRound } from './vote-round.js';

/**
 * What a Redlock provider guarantees: `fencing: 'none'` (no token), loss detection by its validity
 * deadline, extension on a majority, waiters woken by the masters' release announcements (and
 * polling; a released lock goes to a client already waiting, but not in FIFO order), exclusive
 * locks only, per-lock TTLs at 1 ms resolution, TTLs of at least 10 ms.
 */
export const REDLOCK_CAPABILITIES = normalizeCapabilities({
  // No safe monotonic token can come out of N independent counters (Kleppmann, "How to do
  // distributed locking"): a restarted master or a clock jump breaks any of them. Fence elsewhere.
  fencing: 'none',
  // The handle's validity deadline ends the lock on its own, with or without a word from the masters.
  lossDetection: true,
  extend: true,
  notify: true,
  fifo: false,
  readWrite: false,
  expiry: 'per-lock',
  ttlResolutionMs: 1,
  minTtlMs: REDLOCK_MIN_TTL_MS,
  // A key deleted on enough masters fails the next extension's majority.
  deletionNotice: 'renewal',
  // An election is the Redlock mutex at the election's keys (see election-keys.ts): terms are
  // undefined, as tokens are (a deposed leader cannot be fenced), and `observe` polls, since a grant
  // is not announced and a release only to the next waiter's process.
  election: 'polled',
  // Majorities intersect, which excludes a second holder, but they do not count: with a limit of 2
  // on each of 5 masters, holders on {1,2,3}, {3,4,5} and {1,2,4} each have a majority and no master
  // has more than 2. A per-master limit bounds nothing across masters above a limit of 1.
  semaphore: 'none',
});

// A round whose majority came back after the TTL minus drift is retried this many times in a row,
// then the acquire fails: the TTL is too short for these masters, and retrying forever hides that.
const MAX_EXHAUSTED_ROUNDS = 3;

/** A lock this backend granted and has not seen end. */
interface HeldLock {
  readonly keys: RedlockKeys;
  readonly value: string;
  readonly userKey: string;
  readonly ttlMs: number;
  readonly observer: GrantObserver;
}

/** The Redlock algorithm over N masters, as core's one backend primitive. */
export class RedlockBackend implements LockBackend {
  readonly name = 'redlock';
  readonly capabilities = REDLOCK_CAPABILITIES;
  readonly #masters: readonly MasterNode[];
  readonly #options: ResolvedRedlockOptions;
  readonly #quorum: number;
  /** Held locks, for connection-state reports: owner value → what to tell and how to check. */
  readonly #held = new Map<string, HeldLock>();
  readonly #unsubscribe: (() => void)[];
  readonly #listener: ReleaseListener;
  // Rounds that returned at a majority, until their last master has answered (close waits for them).
  readonly #stragglers = new Stragglers();
  readonly #extends: ExtendRounds;
  readonly #elections: MutexElections<RedlockKeys>;
  readonly #keyCache: KeyCache<RedlockKeys>;
  // How long a refused attempt stays in line: a waiter asks again within its longest backoff delay
  // (or at an announcement), and each round takes at most the per-node timeout.
  readonly #maxDelayMs: number;
  #majorityConnected = true;

  constructor(masters: readonly MasterNode[], options: ResolvedRedlockOptions) {
    this.#masters = masters;
    this.#options = options;
    this.#quorum = quorumOf(masters.length);
    this.#keyCache = new KeyCache((key) => redlockKeys(options.keyPrefix, key));
    this.#listener = new ReleaseListener(masters);
    this.#extends = new ExtendRounds(masters, options.clockDriftFactor);
    this.#maxDelayMs = options.retry?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs;
    this.#unsubscribe = masters.map((m) => m.onConnectionChange(() => this.#connectionChanged()));
    this.#elections = new MutexElections((name) => redlockElectionKeys(options.keyPrefix, name), {
      acquire: (request, keys) => this.#acquireAt(request, keys),
      inspect: (name, keys) => this.#inspectAt(name, keys),
    });
  }

  /**
   * Fewer than a majority of connections up: every held lock is `uncertain` (it may still be valid
   * until its deadline). A majority back: each lock is checked — `recovered` if a majority still
   * holds our value, `lost` (taken-over) if a majority says it does not.
   */
  #connectionChanged(): void {
    const connected = this.#masters.filter((m) => m.connected).length >= this.#quorum;
    if (connected === this.#majorityConnected) return;
    this.#majorityConnected = connected;
    for (const held of this.#held.values()) {
      if (!connected) held.observer.uncertain();
      else void this.#recheck(held);
    }
  }

  async #recheck(held: HeldLock): Promise<void> {
    const replies = await Promise.all(this.#masters.map((m) => m.read(held.keys.lock, requestTimeoutFor(this.#options, held.ttlMs))));
    if (!this.#held.has(held.value) || !this.#majorityConnected) return;
    const ours = replies.filter((r) => r.ok && r.value.value === held.value).length;
    const notOurs = replies.filter((r) => r.ok && r.value.value !== held.value).length;
    if (ours >= this.#quorum) held.observer.recovered();
    else if (this.#masters.length - notOurs < this.#quorum) {
      this.#held.delete(held.value);
      held.observer.lost(lockLostError(held.userKey, 'taken-over'));
    }
  }

  /**
   * Rounds until granted or the deadline, with a jittered backoff between them (core's
   * `waitForGrant`). Every failed round has released on every master before the wait starts.
   * - contention (another owner holds, or votes split): keep waiting; at the deadline, not acquired.
   * - a majority of masters NOT CONNECTED (refused, closed): fail fast with LOCK_QUORUM_NOT_REACHED
   *   once that has lasted `unreachableGraceMs` (1 s; at once for tryAcquire), since waiting cannot
   *   help until an operator brings them back; the grace lets clients reconnect after a blip.
   * - a majority FAILING otherwise (timeouts, error replies): transient, keep trying; if the deadline
   *   comes while that is still so, LOCK_QUORUM_NOT_REACHED instead of a plain timeout.
   * - validity exhausted: retried up to 3 rounds in a row, then LOCK_QUORUM_NOT_REACHED.
   */
  acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    return this.#acquireAt(request, this.#keyCache.get(request.key));
  }

  // The Redlock protocol at `keys`: a lock's own keys, or an election's (see election-keys.ts).
  async #acquireAt(request: BackendAcquireRequest, keys: RedlockKeys): Promise<BackendGrant | undefined> {
    const value = encodeLockValue(request.ownerId, request.metadata);
    const requestTimeoutMs = requestTimeoutFor(this.#options, request.ttlMs);
    const waits = request.deadline > monotonicNow();
    const input = {
      keys,
      value,
      ttlMs: request.ttlMs,
      clockDriftFactor: this.#options.clockDriftFactor,
      requestTimeoutMs,
      registerMs: waits ? Math.ceil(this.#maxDelayMs + 2 * requestTimeoutMs) : 0,
      lineTag: this.#listener.lineTag,
      barging: this.#options.handoff === 'barging',
    };
    let last: AcquireRound | undefined;
    let exhaustedInARow = 0;
    let unreachableSince: number | undefined;
    // Whether a refused attempt may have put this acquisition in a master's line of waiters.
    let inLine = false;
    // What the failed rounds may have left on each master (a later round's answered release clears it).
    // Made by the first failed round: an acquisition that gets the lock at once never needs it.
    let copies: MasterCopy[] | undefined;
    const exhausted = (round: Extract<AcquireRound, { kind: 'validity-exhausted' }>) =>
      validityExhaustedError(request.key, round.tally, { ttlMs: request.ttlMs, elapsedMs: round.elapsedMs, validityMs: round.validityMs, rounds: exhaustedInARow });
    let granted: Extract<AcquireRound, { kind: 'acquired' }> | undefined;
    // Counted before the first round is sent: a release announced between its replies and the wait
    // registered after it is still seen (see LocalWaiters.wakeup).
    const since = this.#listener.announcements;
    try {
      const attempt = async (): Promise<Extract<AcquireRound, { kind: 'acquired' }> | undefined> => {
        const round = await acquireRound(this.#masters, input, this.#stragglers);
        last = round;
        if (waits && round.tally.refused > 0) inLine = true;
        if (round.kind === 'acquired') return round;
        const left = (copies ??= this.#masters.map(() => 'untouched'));
        round.copies.forEach((copy, i) => {
          if (copy !== 'untouched') left[i] = copy;
        });
        if (round.kind === 'contended') request.contended();
        if (round.kind === 'failing' || round.kind === 'unreachable') {
          const refused =
            refusedQuorumError(request.key, 'acquiring', this.#quorum, round.tally, this.#masters) ??
            conflictingQuorumError(request.key, 'acquiring', this.#quorum, round.tally);
          if (refused !== undefined) throw refused;
        }
        if (round.kind === 'unreachable') {
          unreachableSince ??= monotonicNow();
          if (monotonicNow() - unreachableSince >= this.#options.unreachableGraceMs) {
            throw quorumNotReachedError(request.key, 'acquiring', this.#quorum, round.tally);
          }
        } else {
          unreachableSince = undefined;
        }
        exhaustedInARow = round.kind === 'validity-exhausted' ? exhaustedInARow + 1 : 0;
        if (round.kind === 'validity-exhausted' && exhaustedInARow >= MAX_EXHAUSTED_ROUNDS) throw exhausted(round);
        return undefined;
      };
      // The first round without the waiting loop and its wake-up source: most acquisitions end with it.
      granted = await attempt();
      if (granted === undefined && request.deadline > monotonicNow()) {
        granted = await waitForGrant(request, attempt, {
          retry: this.#options.retry,
          wakeup: () => this.#listener.wakeup(keys.lock, value, since),
          // Contention is reported by the round above, never for rounds that failed on errors.
          reportContention: false,
          afterFirstAttempt: true,
        });
      }
    } finally {
      // A waiter that stops waiting leaves the line at once, so a free lock is not held back for it
      // (an entry it cannot remove lapses by itself); one that got the lock leaves the lines of the
      // masters that did not grant it (a grant took the entry out in the same script). Cleanup: the
      // call settles first — the caller goes on before these writes, each of which can hand this CPU
      // to the master it wakes — and close() waits for it like a round that returned at a majority.
      const grants = granted?.tally.nodes;
      const lines = !inLine ? [] : grants === undefined ? this.#masters : this.#masters.filter((_, i) => grants[i]?.outcome !== 'granted');
      if (lines.length > 0) {
        const member = lineMember(value, this.#listener.lineTag);
        this.#stragglers.begin();
        setImmediate(() => {
          void voteRound(lines, (master, sink, index) => master.leaveLine(keys.waiters, member, sink, index), { timeoutMs: requestTimeoutMs }).then(() => this.#stragglers.end());
        });
      }
      // A copy a failed round could not confirm gone (its master timed out, or dropped the
      // connection) may sit there until its TTL. Once this acquisition is over without a grant its
      // value is never used again, so core's retried release can only delete that copy; the SETs
      // were sent before now, so they expire a TTL from now at the latest.
      if (granted === undefined && copies?.includes('maybe') === true) {
        const cleanup = new MastersRelease(
          this.#masters,
          { keys, value, timeoutMs: requestTimeoutMs, head: '' },
          copies.map((copy) => copy !== 'maybe'),
        );
        request.releaseLater(async () => {
          const state = await cleanup.attempt();
          if (state.answered < this.#masters.length) {
            throw quorumNotReachedError(request.key, 'cleaning up after', this.#masters.length, tally(this.#masters, state.replies));
          }
        }, monotonicNow() + request.ttlMs);
      }
    }
    if (granted !== undefined) return this.#grant(request, keys, value, granted.validUntil);
    const final = last as AcquireRound | undefined;
    if (final?.kind === 'failing' || final?.kind === 'unreachable') throw quorumNotReachedError(request.key, 'acquiring', this.#quorum, final.tally);
    if (final?.kind === 'validity-exhausted') throw exhausted(final);
    return undefined;
  }

  /**
   * The masters' eviction policies: one warning naming every master that is not on `noeviction` (a
   * lock key evicted on enough masters gives a second majority). Masters that do not answer are
   * skipped; rejects only when none answers, so that core asks again later.
   */
  async checkConfiguration(): Promise<readonly BackendWarning[]> {
    const timeoutMs = requestTimeoutFor(this.#options, 10_000);
    const replies = await Promise.all(this.#masters.map((master) => master.evictionWarning(timeoutMs)));
    if (!replies.some((reply) => reply.ok)) throw new Error('no Redlock master answered the configuration check');
    return mergeEvictionWarnings(replies.map((reply) => (reply.ok ? reply.value : undefined)));
  }

  /**
   * The holder a majority of masters agree on, with the remaining TTL the majority still has
   * (the quorum-th largest `PTTL`). A key present on a minority only is reported free (no one can
   * hold it); one present on a majority under differing values shows the most frequent value.
   */
  inspect(userKey: string): Promise<LockInfo | undefined> {
    return this.#inspectAt(userKey, this.#keyCache.get(userKey));
  }

  async #inspectAt(userKey: string, keys: RedlockKeys): Promise<LockInfo | undefined> {
    const key = keys.lock;
    const timeoutMs = requestTimeoutFor(this.#options, 10_000);
    const replies = await Promise.all(this.#masters.map((m) => m.read(key, timeoutMs)));
    const answered = replies.filter((r) => r.ok).length;
    if (answered < this.#quorum) {
      const counted = tally(this.#masters, replies.map((r) => (r.ok ? { ok: true as const, value: true } : r)));
      throw quorumNotReachedError(userKey, 'inspecting', this.#quorum, counted);
    }
    const byValue = new Map<string, number[]>();
    for (const reply of replies) {
      if (!reply.ok || reply.value.value === null) continue;
      const ttls = byValue.get(reply.value.value) ?? [];
      ttls.push(reply.value.pttlMs);
      byValue.set(reply.value.value, ttls);
    }
    // The holder a majority agrees on; failing that, a key present on a majority under differing
    // values (foreign locks taken per master) is still held: report its most frequent value.
    let best: [string, number[]] | undefined;
    for (const entry of byValue) if (best === undefined || entry[1].length > best[1].length) best = entry;
    const present = [...byValue.values()].reduce((sum, ttls) => sum + ttls.length, 0);
    if (best === undefined || present < this.#quorum) return undefined;
    const [value, ttls] = best;
    const { ownerId, metadata } = decodeLockValue(value);
    // The remaining TTL the majority still has: the quorum-th largest PTTL among the agreeing masters.
    const majorityTtl = ttls.length >= this.#quorum ? ttls.sort((a, b) => b - a)[this.#quorum - 1] : undefined;
    const holder: LockHolder = {
      ownerId,
      mode: 'exclusive',
      fencingToken: undefined,
      remainingMs: majorityTtl === undefined || majorityTtl < 0 ? undefined : majorityTtl,
      metadata,
    };
    return { key: userKey, holders: [holder] };
  }

  campaign(request: BackendCampaignRequest): Promise<BackendGrant | undefined> {
    return this.#elections.campaign(request);
  }

  leader(name: string): Promise<LeaderInfo | undefined> {
    return this.#elections.leader(name);
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.#held.clear();
    this.#listener.close();
    // Rounds that returned at a majority still have requests out (each bounded by its round's timeout).
    await this.#stragglers.settled();
    for (const master of this.#masters) master.close();
  }

  #grant(request: BackendAcquireRequest, keys: RedlockKeys, value: string, firstValidUntil: number): BackendGrant {
    const masters = this.#masters;
    const options = this.#options;
    const quorum = this.#quorum;
    const heldLocks = this.#held;
    const extendRounds = this.#extends;
    const key = keys.lock;
    heldLocks.set(value, { keys, value, userKey: request.key, ttlMs: request.ttlMs, observer: request.observer });
    const forget = (): void => {
      heldLocks.delete(value);
    };
    // Announced, so that a client waiting for this key tries again at once.
    const release = new MastersRelease(masters, {
      keys,
      value,
      timeoutMs: requestTimeoutFor(options, request.ttlMs),
      head: announcementHead(request.ownerId),
      stragglers: this.#stragglers,
    });
    let validUntil = firstValidUntil;
    return {
      fencingToken: undefined,
      validUntil: firstValidUntil,
      // One round; a failed one rejects, and core retries automatic renewals while the lock is valid.
      async extend(ttlMs: number): Promise<number> {
        const round = await extendRounds.extend({ key, value, ttlMs, requestTimeoutMs: extendTimeoutFor(options, ttlMs), validUntil });
        switch (round.kind) {
          case 'extended':
            validUntil = round.validUntil;
            // A majority just confirmed the lock: whatever the connections did, it is held.
            request.observer.recovered();
            return validUntil;
          case 'lost':
            forget();
            throw lockLostError(request.key, 'taken-over');
          case 'expired':
            forget();
            throw lockLostError(request.key, 'expired');
          default:
            throw quorumNotReachedError(request.key, 'extending', quorum, round.tally);
        }
      },
      // One round to the masters that have not answered yet. Done once a majority answered (the
      // others are still told, in the background): no majority can hold the lock any more. Rejects
      // otherwise, so that core retries while the lock could still be valid.
      async release(): Promise<boolean> {
        forget();
        const state = await release.attempt(quorum);
        if (state.answered < quorum) throw quorumNotReachedError(request.key, 'releasing', quorum, tally(masters, state.replies));
        // It was still held if a majority still had it: fewer copies could not have been a valid lock.
        return state.deleted >= quorum;
      },
    };
  }
}
