import { type RedlockKeys, RELEASE_CHANNEL } from './lock-keys.js';
import type { MasterNode, NodeReply } from './master-node.js';
import { releaseArguments } from './redlock-scripts.js';
import { type Stragglers, voteRound } from './vote-round.js';

/** What a release round needs besides the masters. */
export interface ReleaseInput {
  readonly keys: RedlockKeys;
  readonly value: string;
  readonly timeoutMs: number;
  /** The announcement's head (`announcementHead`), or `''` to release without waking waiters. */
  readonly head: string;
  /** Stop once this many masters confirmed (a majority: the lock is surely over); default: wait for all. */
  readonly enoughYes?: number;
  /** See `VoteRoundOptions.stragglers`. */
  readonly stragglers?: Stragglers;
}

/**
 * Redlock release: the owner-checked release script on EVERY master, in parallel — also on masters
 * that did not answer the acquire or that we believe never got it, because a SET that timed out on
 * the client may still be applied (a paused server applies its queued requests when it resumes).
 *
 * Guarantees: never deletes a key another owner holds (the script compares the whole value);
 * resolves within the timeout; never rejects. On a disconnected master ioredis keeps the release
 * queued behind any request it may still deliver, so a late SET is undone by it in order.
 */
export function releaseOnAll(masters: readonly MasterNode[], input: ReleaseInput): Promise<NodeReply<boolean>[]> {
  const args = releaseArguments(input.keys, input.value, RELEASE_CHANNEL, input.head);
  return voteRound(masters, (master, sink, index) => master.release(args, sink, index), {
    timeoutMs: input.timeoutMs,
    askDown: true,
    enoughYes: input.enoughYes,
    stragglers: input.stragglers,
  });
}

/** What the attempts of a {@link MastersRelease} have learnt so far. */
export interface MastersReleaseState {
  /** How many masters answered a release (in any attempt): none of them keeps a copy of the value. */
  readonly answered: number;
  /** Of those, how many deleted a copy that was there. */
  readonly deleted: number;
  /** Per master, in configured order: its answer so far, or the failure of its last attempt. */
  readonly replies: readonly NodeReply<boolean>[];
}

/**
 * The release of one lock value on the masters, as core retries it: each {@link attempt} is one round
 * (bounded by the timeout) to the masters that have not answered yet; a master that answered keeps
 * no copy of the value (deleted now, or it was not ours), so it is not asked again. The caller
 * decides from the state how many answers are enough.
 */
export class MastersRelease {
  readonly #masters: readonly MasterNode[];
  readonly #input: Omit<ReleaseInput, 'enoughYes'>;
  // Per master: undefined until it answers; then whether it deleted a copy.
  readonly #answers: (boolean | undefined)[];
  #replies: NodeReply<boolean>[];

  /** `settled[i]` true: master i is known to keep no copy and is never asked. */
  constructor(masters: readonly MasterNode[], input: Omit<ReleaseInput, 'enoughYes'>, settled?: readonly boolean[]) {
    this.#masters = masters;
    this.#input = input;
    this.#answers = masters.map((_, i) => (settled?.[i] === true ? false : undefined));
    this.#replies = this.#answers.map((answer) => ({ ok: true, value: answer === true }));
  }

  /** One round to the masters that have not answered; stops early once `enoughDeleted` deleted in all. Never rejects. */
  async attempt(enoughDeleted?: number): Promise<MastersReleaseState> {
    // Plain loops and one options object: a release runs once per lock, on every acquire/release cycle.
    const pending: MasterNode[] = [];
    const indexes: number[] = [];
    let deletedBefore = 0;
    for (let i = 0; i < this.#masters.length; i += 1) {
      const answer = this.#answers[i];
      if (answer === true) deletedBefore += 1;
      if (answer === undefined) {
        pending.push(this.#masters[i] as MasterNode);
        indexes.push(i);
      }
    }
    if (pending.length > 0) {
      const input: ReleaseInput = {
        keys: this.#input.keys,
        value: this.#input.value,
        timeoutMs: this.#input.timeoutMs,
        head: this.#input.head,
        enoughYes: enoughDeleted === undefined ? undefined : Math.max(1, enoughDeleted - deletedBefore),
        stragglers: this.#input.stragglers,
      };
      const replies = await releaseOnAll(pending, input);
      const next = this.#replies.slice();
      for (let j = 0; j < replies.length; j += 1) {
        const reply = replies[j] as NodeReply<boolean>;
        const index = indexes[j] as number;
        next[index] = reply;
        if (reply.ok) this.#answers[index] = reply.value;
      }
      this.#replies = next;
    }
    let answered = 0;
    let deleted = 0;
    for (const answer of this.#answers) {
      if (answer !== undefined) answered += 1;
      if (answer === true) deleted += 1;
    }
    return { answered, deleted, replies: this.#replies };
  }
}
