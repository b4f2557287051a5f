import { type RedlockKeys, RELEASE_CHANNEL } from './lock-keys.js';
import type { MasterNode, NodeReply } from './master-node.js';
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
  const { keys, value, head } = input;
  return voteRound(masters, (master) => master.release(keys, value, RELEASE_CHANNEL, head), {
    timeoutMs: input.timeoutMs,
    askDown: true,
    ...(input.enoughYes === undefined ? {} : { enoughYes: input.enoughYes }),
    ...(input.stragglers === undefined ? {} : { stragglers: input.stragglers }),
  });
}
