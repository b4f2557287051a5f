import { type MasterNode, type NodeReply, NodeNotConnectedError, NodeTimeoutError } from './master-node.js';

// A round that stopped at a majority reports the masters it did not wait for with this one error:
// building an Error per master per round (its stack trace) cost more than the round's own work.
const NOT_AWAITED: NodeReply<boolean> = Object.freeze({
  ok: false,
  error: new NodeTimeoutError('had not answered when a majority had (not awaited)'),
  unreachable: false,
});

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
 * masters' order. One timer bounds the whole round (not one per master: the requests leave
 * together, so their bounds would end together). A master known to be down is not asked unless
 * `askDown`. Never
 * rejects. Replies still outstanding when the round stops early are reported as not awaited; the
 * requests themselves still reach their masters, each connection in order, so a later request on
 * the same connection (a release after an acquire) is applied after them.
 */
export async function voteRound(
  masters: readonly MasterNode[],
  send: (master: MasterNode) => Promise<boolean>,
  options: VoteRoundOptions,
): Promise<NodeReply<boolean>[]> {
  // A new client's first connection is not part of a master's answer time (see MasterNode.connecting).
  for (const master of masters) if (master.connecting !== undefined) await master.connecting;
  return new Promise((resolve) => {
    const count = masters.length;
    const replies: (NodeReply<boolean> | undefined)[] = new Array(count);
    let answered = 0;
    let yes = 0;
    let decided = false;
    let straggling = false;
    let timer: NodeJS.Timeout | undefined;
    let deferred: NodeJS.Immediate | undefined;
    const decide = (timedOut: boolean): void => {
      if (decided) return;
      decided = true;
      const result = replies.slice();
      for (let i = 0; i < count; i += 1) {
        if (result[i] !== undefined) continue;
        result[i] = timedOut
          ? { ok: false, error: new NodeTimeoutError(`${(masters[i] as MasterNode).name} did not answer within ${options.timeoutMs} ms`), unreachable: false }
          : NOT_AWAITED;
      }
      resolve(result as NodeReply<boolean>[]);
    };
    const end = (): void => {
      clearTimeout(timer);
      clearImmediate(deferred);
      decide(true);
      if (straggling) options.stragglers?.end();
      straggling = false;
    };
    const record = (index: number, reply: NodeReply<boolean>): void => {
      if (replies[index] !== undefined) return;
      replies[index] = reply;
      answered += 1;
      if (reply.ok && reply.value) yes += 1;
      if (answered === count) {
        end();
      } else if (!decided && options.enoughYes !== undefined && yes >= options.enoughYes) {
        decide(false);
        straggling = options.stragglers !== undefined;
        options.stragglers?.begin();
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
    if (answered === count) return;
    // After an event-loop stall the timer phase runs before pending socket reads: give replies that
    // are already here one poll phase to be read (setImmediate runs after it) before calling them late.
    timer = setTimeout(() => {
      deferred = setImmediate(end);
    }, options.timeoutMs);
  });
}
