import { RequestTimeoutError, monotonicNow, waitFor } from '@fencelock/core/adapter';
import { type MasterNode, type NodeReply, NodeNotConnectedError } from './master-node.js';

// A round that stopped at a majority reports the masters it did not wait for with this one error:
// building an Error per master per round (its stack trace) cost more than the round's own work.
const NOT_AWAITED: NodeReply<boolean> = Object.freeze({ ok: false, error: notAwaitedError(), unreachable: false });

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
 * timeout). A counter, not a promise per round: most rounds on a healthy cluster return early.
 */
export class Stragglers {
  #count = 0;
  #idle: (() => void)[] = [];

  /** A round returned with requests still out. */
  begin(): void {
    this.#count += 1;
  }

  /** That round's last master answered, or its timeout passed. */
  end(): void {
    this.#count -= 1;
    if (this.#count === 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** Resolves once no round has requests out. */
  settled(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}

/**
 * Sends one request to every master at once and collects the answers as {@link NodeReply}s, in the
 * masters' order. One wait (core's `waitFor`) bounds the whole round, not one timer per master: the
 * requests leave together, so their bounds would end together. A master known to be down is not
 * asked unless `askDown`. Never rejects. Replies still outstanding when the round stops early are
 * reported as not awaited; the requests themselves still reach their masters, each connection in
 * order, so a later request on the same connection (a release after an acquire) is applied after them.
 */
export async function voteRound(
  masters: readonly MasterNode[],
  send: (master: MasterNode) => Promise<boolean>,
  options: VoteRoundOptions,
): Promise<NodeReply<boolean>[]> {
  // A new client's first connection is not part of a master's answer time (see MasterNode.connecting).
  for (const master of masters) if (master.connecting !== undefined) await master.connecting;
  const count = masters.length;
  const deadline = monotonicNow() + options.timeoutMs;
  const replies: (NodeReply<boolean> | undefined)[] = new Array(count);
  let answered = 0;
  let yes = 0;
  // What the waits of this round are woken by: the majority (`decided`), the last reply (`all`).
  let wakeDecided: ((value: void) => void) | undefined;
  let wakeAll: ((value: void) => void) | undefined;
  const record = (index: number, reply: NodeReply<boolean>): void => {
    if (replies[index] !== undefined) return;
    replies[index] = reply;
    answered += 1;
    if (reply.ok && reply.value) yes += 1;
    if (answered === count) {
      wakeDecided?.();
      wakeAll?.();
    } else if (options.enoughYes !== undefined && yes >= options.enoughYes) {
      wakeDecided?.();
    }
  };
  for (let i = 0; i < count; i += 1) {
    const master = masters[i] as MasterNode;
    if (master.down && options.askDown !== true) {
      record(i, { ok: false, error: new NodeNotConnectedError(`${master.name} is not connected (${master.client.status})`), unreachable: true });
      continue;
    }
    let sent: Promise<boolean>;
    try {
      sent = send(master);
    } catch (error) {
      record(i, { ok: false, error, unreachable: false });
      continue;
    }
    sent.then(
      (value) => record(i, { ok: true, value }),
      (error: unknown) => record(i, { ok: false, error, unreachable: master.client.status !== 'ready' }),
    );
  }
  const decided = (): boolean => answered === count || (options.enoughYes !== undefined && yes >= options.enoughYes);
  if (!decided()) {
    const outcome = await waitFor<void>({
      deadline,
      until: (wake) => {
        wakeDecided = wake;
        return () => {
          wakeDecided = undefined;
        };
      },
    });
    // After an event-loop stall the timer phase runs before pending socket reads: give replies that
    // are already here one poll phase to be read (setImmediate runs after it) before calling them late.
    if (!outcome.woken) await new Promise((resolve) => setImmediate(resolve));
  }
  const timedOut = !decided();
  // A copy, filled where a master did not answer (a later answer is recorded in `replies` only).
  const result: NodeReply<boolean>[] = replies.slice() as NodeReply<boolean>[];
  if (answered < count) {
    for (let i = 0; i < count; i += 1) {
      result[i] ??= timedOut
        ? { ok: false, error: new RequestTimeoutError(`${(masters[i] as MasterNode).name}`, options.timeoutMs), unreachable: false }
        : NOT_AWAITED;
    }
  }
  // Returned at a majority with requests still out: counted until the last one answers or the bound passes.
  if (answered < count && !timedOut && options.stragglers !== undefined) {
    const stragglers = options.stragglers;
    stragglers.begin();
    void waitFor<void>({
      deadline,
      until: (wake) => {
        wakeAll = wake;
        return () => {
          wakeAll = undefined;
        };
      },
    }).finally(() => stragglers.end());
  }
  return result;
}
