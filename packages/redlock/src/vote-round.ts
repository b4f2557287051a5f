import { InFlight as Stragglers, RequestDeadlines, RequestTimeoutError } from '@fencelock/core/adapter';
import { type MasterNode, type NodeReply, type VoteSink, NodeNotConnectedError } from './master-node.js';

// A round that stopped at a majority reports the masters it did not wait for with this one error:
// building an Error per master per round (its stack trace) cost more than the round's own work.
export const NOT_AWAITED: NodeReply<boolean> = Object.freeze({ ok: false, error: notAwaitedError(), unreachable: false });

// A plain yes or no is the same reply every time: not an object per master per round.
const YES: NodeReply<boolean> = Object.freeze({ ok: true, value: true });
const NO: NodeReply<boolean> = Object.freeze({ ok: true, value: false });

function notAwaitedError(): RequestTimeoutError {
  const error = new RequestTimeoutError('a master', 0);
  error.message = 'had not answered when a majority had (not awaited)';
  return error;
}

/** When a round may stop before every master has answered. */
export interface VoteRoundOptions {
  /** Bound on the round, in ms: masters that have not answered by then count as timed out. */
  readonly timeoutMs: number;
  /**
   * Stop as soon as this many masters said yes (a majority: the outcome cannot change any more).
   * Undefined: wait for every master or the timeout.
   */
  readonly enoughYes?: number;
  /**
   * Ask masters whose connection is known down too (default false: they are reported unreachable at
   * once). Releases do: ioredis queues the request behind anything it may still deliver to that
   * master, so a late grant is undone in order.
   */
  readonly askDown?: boolean;
  /** Counts the round while it has requests out after returning early, so that closing can wait for them. */
  readonly stragglers?: Stragglers;
}

/**
 * Rounds that returned at a majority and still have requests out (each bounded by its round's
 * timeout), counted so that closing can wait for them: core's in-flight counter.
 */
export { Stragglers };

// How the deadline rings treat rounds: one handler object for all of them.
const ROUND_DEADLINES = {
  // Every master answered: nothing is left to time out (the ring forgets the round).
  settled: (round: VoteRound): boolean => round.allAnswered,
  expire: (round: VoteRound): void => round.expire(),
};

// One ring per round bound in use (a bound follows from the TTL: a handful of values in practice);
// past this many, a bound gets a ring of its own per round, which costs what a timer does.
const MAX_SHARED_RINGS = 32;
const rings = new Map<number, RequestDeadlines<VoteRound>>();

function ringFor(timeoutMs: number): RequestDeadlines<VoteRound> {
  let ring = rings.get(timeoutMs);
  if (ring === undefined) {
    ring = new RequestDeadlines<VoteRound>(timeoutMs, ROUND_DEADLINES);
    if (rings.size < MAX_SHARED_RINGS) rings.set(timeoutMs, ring);
  }
  return ring;
}

/**
 * One round's answers, and the promise of its outcome. The round is its own reply handler and the
 * entry of its bound in a shared deadline ring (core's `RequestDeadlines`: one timer for every round
 * in flight with that bound, instead of a timer for the majority and another for the stragglers).
 */
class VoteRound implements VoteSink {
  readonly #masters: readonly MasterNode[];
  readonly #replies: (NodeReply<boolean> | undefined)[];
  readonly #options: VoteRoundOptions;
  #answered = 0;
  #yes = 0;
  // Set while the caller waits; cleared once it has its result.
  #resolve: ((replies: NodeReply<boolean>[]) => void) | undefined;
  #returned = false;
  // The stragglers counter this round is counted in, after returning at a majority.
  #straggling: Stragglers | undefined;

  constructor(masters: readonly MasterNode[], options: VoteRoundOptions) {
    this.#masters = masters;
    this.#replies = new Array<NodeReply<boolean> | undefined>(masters.length);
    this.#options = options;
  }

  get allAnswered(): boolean {
    return this.#answered === this.#masters.length;
  }

  get decided(): boolean {
    const { enoughYes } = this.#options;
    return this.allAnswered || (enoughYes !== undefined && this.#yes >= enoughYes);
  }

  /** Master `index` answered (a later answer for the same master is ignored). */
  record(index: number, reply: NodeReply<boolean>): void {
    if (this.#replies[index] !== undefined) return;
    this.#replies[index] = reply;
    this.#answered += 1;
    if (reply.ok && reply.value) this.#yes += 1;
    if (this.allAnswered && this.#straggling !== undefined) {
      this.#straggling.end();
      this.#straggling = undefined;
    }
    if (!this.#returned && this.decided) this.#finish(false);
  }

  answered(index: number, yes: boolean): void {
    this.record(index, yes ? YES : NO);
  }

  failed(index: number, error: unknown): void {
    this.record(index, { ok: false, error, unreachable: (this.#masters[index] as MasterNode).client.status !== 'ready' });
  }

  /** The caller's wait for the outcome. */
  outcome(): Promise<NodeReply<boolean>[]> {
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  /** The bound passed, after the replies already read were recorded (see `RequestDeadlines`). */
  expire(): void {
    if (!this.#returned) this.#finish(true);
    else if (this.#straggling !== undefined) {
      this.#straggling.end();
      this.#straggling = undefined;
    }
  }

  /** The result now: a copy of the replies, filled where a master did not answer. */
  result(timedOut: boolean): NodeReply<boolean>[] {
    const result = this.#replies.slice() as NodeReply<boolean>[];
    if (this.allAnswered) return result;
    for (let i = 0; i < result.length; i += 1) {
      result[i] ??= timedOut
        ? { ok: false, error: new RequestTimeoutError(`${(this.#masters[i] as MasterNode).name}`, this.#options.timeoutMs), unreachable: false }
        : NOT_AWAITED;
    }
    return result;
  }

  #finish(timedOut: boolean): void {
    this.#returned = true;
    // Returned at a majority with requests still out: counted until the last one answers or the bound passes.
    if (!timedOut && !this.allAnswered && this.#options.stragglers !== undefined) {
      this.#straggling = this.#options.stragglers;
      this.#straggling.begin();
    }
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.(this.result(timedOut));
  }
}

/**
 * Sends one request to every master at once and collects the answers as {@link NodeReply}s, in the
 * masters' order. One bound covers the whole round, not one timer per master: the requests leave
 * together, so their bounds would end together; and rounds with the same bound share one timer
 * (see {@link VoteRound}). A master known to be down is not asked unless `askDown`. Never rejects.
 * Replies still outstanding when the round stops early are reported as not awaited; the requests
 * themselves still reach their masters, each connection in order, so a later request on the same
 * connection (a release after an acquire) is applied after them.
 */
export async function voteRound(
  masters: readonly MasterNode[],
  send: (master: MasterNode, sink: VoteSink, index: number) => void,
  options: VoteRoundOptions,
): Promise<NodeReply<boolean>[]> {
  // A new client's first connection is not part of a master's answer time (see MasterNode.connecting).
  for (const master of masters) if (master.connecting !== undefined) await master.connecting;
  const round = new VoteRound(masters, options);
  for (let i = 0; i < masters.length; i += 1) {
    const master = masters[i] as MasterNode;
    if (master.down && options.askDown !== true) {
      round.record(i, { ok: false, error: new NodeNotConnectedError(`${master.name} is not connected (${master.client.status})`), unreachable: true });
      continue;
    }
    try {
      send(master, round, i);
    } catch (error) {
      round.record(i, { ok: false, error, unreachable: false });
    }
  }
  // Decided without a request out (every master down, or every send threw): nothing to wait for.
  if (round.decided) return round.result(false);
  const outcome = round.outcome();
  if (Number.isFinite(options.timeoutMs)) ringFor(options.timeoutMs).add(round);
  return outcome;
}
