import { CompareResult, CompareTarget, type IKeyValue, type IRangeRequest, SortOrder, SortTarget } from 'etcd3';
import { type EtcdCalls, createRevision } from './etcd-calls.js';
import { decodeSemaphoreValue } from './lock-value.js';
import { type LockRange, tombstoneKey } from './revision-queue.js';

/**
 * The protocol steps of a counting semaphore on etcd: the mutex recipe (contender keys on the session
 * lease, ordered by create revision under `<semaphore>/`) where the first N permits hold instead of
 * the first key. A contender holds when the permits of every earlier contender plus its own fit in
 * the limit; earlier contenders still waiting count too, so nobody overtakes (FIFO: a request for
 * many permits holds back later, smaller ones, and is never starved by them).
 *
 * The fencing token is the contender key's create revision. It increases strictly in grant order:
 * at any revision, the contenders that may hold are a prefix of the contenders by create revision
 * (a contender's condition covers every earlier one's, since the permits ahead of an earlier key are
 * a subset of those ahead of ours), and that prefix only grows as keys are deleted (new keys are
 * later ones). So a contender holds from the revision its last blocker left, no earlier one holds
 * for the first time after it, and every later one does so at that revision or after: a grant's
 * token is greater than that of every permit granted before it, and smaller than any granted after.
 */

/** Where a contender stands, from the keys created before its own. */
export type SemaphoreTurn =
  | { readonly kind: 'granted' }
  /**
   * Not yet: `window` is the nearest earlier contenders whose permits alone keep ours out. Only a
   * deletion among them can let us in (anything further back leaves them still blocking), so they
   * are all a waiter watches: a release wakes at most the `limit` waiters (in permits) right after it
   * (a window too wide for a watch per key is watched as the whole range: see the backend).
   */
  | { readonly kind: 'blocked'; readonly window: readonly IKeyValue[] }
  /** An earlier contender agreed to another limit: this one must not take part. */
  | { readonly kind: 'mismatch'; readonly limit: number };

/**
 * Decides a contender's turn from the earlier contenders' keys, newest first. A key that is not one
 * of ours (another tool's) counts as taking every permit, as a foreign key excludes everyone from a lock.
 */
export function semaphoreTurn(earlierNewestFirst: readonly IKeyValue[], limit: number, permits: number): SemaphoreTurn {
  // Every earlier contender is checked, not only the holders: whichever of two contenders that
  // disagree comes later refuses itself, so no two holders ever disagree (comparing with the oldest
  // alone would not do: it may leave, and a waiter of another limit then hold beside us). The limit
  // reported is the oldest disagreeing one's: the holders', when they are the ones that disagree.
  let taken = 0;
  let disagreeing: number | undefined;
  for (const kv of earlierNewestFirst) {
    const value = decodeSemaphoreValue(kv.value);
    if (value !== undefined && value.limit !== limit) disagreeing = value.limit;
    taken += value?.permits ?? limit;
  }
  if (disagreeing !== undefined) return { kind: 'mismatch', limit: disagreeing };
  if (taken + permits <= limit) return { kind: 'granted' };
  // The fewest nearest keys whose permits leave no room for ours: more than `limit - permits`.
  const window: IKeyValue[] = [];
  let blocking = 0;
  for (const kv of earlierNewestFirst) {
    window.push(kv);
    blocking += decodeSemaphoreValue(kv.value)?.permits ?? limit;
    if (blocking + permits > limit) break;
  }
  return { kind: 'blocked', window };
}

function earlierRange(range: LockRange, maxCreateRevision?: bigint): IRangeRequest {
  return {
    key: range.start,
    range_end: range.end,
    sort_target: SortTarget.Create,
    sort_order: SortOrder.Descend,
    // Every earlier contender: each one's limit is checked, and each one's permits count.
    ...(maxCreateRevision === undefined ? {} : { max_create_revision: maxCreateRevision.toString() }),
  };
}

/** The outcome of {@link enqueueContender}. */
export type ContenderOutcome =
  | { readonly created: true; readonly revision: bigint; readonly turn: SemaphoreTurn }
  | { readonly created: false };

/**
 * Puts our contender key with the session lease, if neither it nor its tombstone exists, and in the
 * same transaction reads every contender of the semaphore. The put's revision is our create
 * revision, so the keys created before it are exactly those ahead of us.
 */
export async function enqueueContender(
  calls: EtcdCalls,
  range: LockRange,
  contenderKey: Buffer,
  value: Buffer,
  leaseId: string,
  limit: number,
  permits: number,
): Promise<ContenderOutcome> {
  const response = await calls.txn({
    compare: [
      { key: contenderKey, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 },
      { key: tombstoneKey(range.tombstones, contenderKey), target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 },
    ],
    success: [{ request_put: { key: contenderKey, value, lease: leaseId } }, { request_range: earlierRange(range) }],
    failure: [],
  });
  if (!response.succeeded) return { created: false };
  const revision = BigInt(response.header.revision);
  const kvs = response.responses[1]?.response_range.kvs ?? [];
  const earlier = kvs.filter((kv) => createRevision(kv) < revision);
  return { created: true, revision, turn: semaphoreTurn(earlier, limit, permits) };
}

/** The outcome of {@link checkContender}: our key is gone (lease lost, or deleted), or our turn. */
export type ContenderCheck = { readonly gone: true } | { readonly gone: false; readonly turn: SemaphoreTurn };

/**
 * Re-checks, in one linearizable transaction, that our key still exists with its create revision
 * (our lease is alive at this revision) and where we stand among the contenders created before it.
 */
export async function checkContender(
  calls: EtcdCalls,
  range: LockRange,
  contenderKey: Buffer,
  revision: bigint,
  limit: number,
  permits: number,
): Promise<ContenderCheck> {
  const response = await calls.txn({
    compare: [{ key: contenderKey, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: revision.toString() }],
    success: [{ request_range: earlierRange(range, revision - 1n) }],
    failure: [],
  });
  if (!response.succeeded) return { gone: true };
  return { gone: false, turn: semaphoreTurn(response.responses[0]?.response_range.kvs ?? [], limit, permits) };
}

/** One holder of a semaphore as etcd shows it: its key, and its permits and limit when the key is ours. */
export interface SemaphoreHolderKey {
  readonly kv: IKeyValue;
  readonly permits: number;
}

/**
 * The holders among a semaphore's keys (oldest first): the longest run from the oldest whose permits
 * fit in the limit, the limit being that of the oldest key of ours. A key of another tool counts as
 * every permit; alone, it is one holder of a semaphore of limit 1.
 */
export function semaphoreHolders(oldestFirst: readonly IKeyValue[]): { limit: number; holders: SemaphoreHolderKey[] } {
  const limit = oldestFirst.map((kv) => decodeSemaphoreValue(kv.value)?.limit).find((found) => found !== undefined) ?? 1;
  const holders: SemaphoreHolderKey[] = [];
  let taken = 0;
  for (const kv of oldestFirst) {
    const permits = decodeSemaphoreValue(kv.value)?.permits ?? limit;
    if (taken + permits > limit) break;
    taken += permits;
    holders.push({ kv, permits });
  }
  return { limit, holders };
}
