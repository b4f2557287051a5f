import type { MasterNode, NodeReply } from './master-node.js';

/**
 * Redlock release: the owner-checked release script on EVERY master, in parallel — also on masters
 * that did not answer the acquire or that we believe never got it, because a SET that timed out on
 * the client may still be applied (a paused server applies its queued requests when it resumes).
 *
 * Guarantees: never deletes a key another owner holds (the script compares the whole value);
 * resolves within the per-node timeout; never rejects. On a disconnected master ioredis keeps the
 * release queued behind any request it may still deliver, so a late SET is undone by it in order.
 */
export function releaseOnAll(masters: readonly MasterNode[], key: string, value: string, timeoutMs: number): Promise<NodeReply<boolean>[]> {
  return Promise.all(masters.map((master) => master.release(key, value, timeoutMs)));
}
