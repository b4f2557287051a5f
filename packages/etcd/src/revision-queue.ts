import type { LockMode } from '@fencelock/core';
import { CompareResult, CompareTarget, type ICompare, type IKeyValue, type IRangeRequest, SortOrder, SortTarget } from 'etcd3';
import { type EtcdCalls, createRevision } from './etcd-calls.js';
import { isReader } from './lock-value.js';
import { prefixRange, tombstoneRoot } from './key-encoding.js';

/**
 * The protocol steps of etcd's `concurrency.Mutex`, extended to readers and writers, one function each.
 * Order is by create revision among EVERY key under `<lock>/` (as Go does), so foreign holders count.
 */

/** Where one lock's waiters live. */
export interface LockRange {
  /** `<lock>/`, the prefix of every waiter key. */
  readonly prefix: Buffer;
  /** The same prefix as text (waiter names are built from it). */
  readonly prefixText: string;
  readonly start: Buffer;
  readonly end: Buffer;
  /** Where this lock's tombstones live (`tombstoneRoot` of the provider's key prefix). */
  readonly tombstones: Buffer;
}

/** Builds the waiter range of lock `name` (its buffers are shared by whoever holds it: never write to them). */
export function lockRange(name: string, keyPrefix: string): LockRange {
  const prefixText = `${name}/`;
  const prefix = Buffer.from(prefixText, 'utf8');
  return { prefix, prefixText, ...prefixRange(prefix), tombstones: tombstoneRoot(keyPrefix) };
}

/**
 * Where a cancelled attempt leaves a tombstone (under its lease): outside every lock's range (see
 * `tombstoneRoot`). An enqueue refuses to run once its tombstone exists, so a put that was still in
 * flight when we gave up can never land after our cleanup.
 */
export function tombstoneKey(tombstones: Buffer, waiterKey: Buffer): Buffer {
  return Buffer.concat([tombstones, waiterKey]);
}

/** Who a waiter must wait for: a writer waits for the key just before it; a reader for the last earlier writer. */
export function findBlocker(earlier: readonly IKeyValue[], mode: LockMode): IKeyValue | undefined {
  // `earlier` is sorted by create revision, newest first.
  if (mode === 'exclusive') return earlier[0];
  return earlier.find((kv) => !isReader(kv.value));
}

function earlierRange(range: LockRange, mode: LockMode, maxCreateRevision?: bigint): IRangeRequest {
  return {
    key: range.start,
    range_end: range.end,
    sort_target: SortTarget.Create,
    sort_order: SortOrder.Descend,
    // A writer needs only its predecessor; a reader scans back to the last writer.
    limit: mode === 'exclusive' ? (maxCreateRevision === undefined ? 2 : 1) : 0,
    ...(maxCreateRevision === undefined ? {} : { max_create_revision: maxCreateRevision.toString() }),
  };
}

/** The outcome of {@link enqueue}. */
export type EnqueueOutcome =
  | { readonly created: true; readonly revision: bigint; readonly blocker: IKeyValue | undefined }
  | { readonly created: false };

/**
 * Puts our waiter key with the session lease, if neither it nor its tombstone exists, and in the
 * same transaction reads who is ahead of us over the WHOLE `<lock>/` range. Go reads the owner (the
 * first key by create revision); we read from the newest end instead: our key has the greatest
 * create revision in the range, so a writer owns the lock exactly when nothing older exists, and the
 * key just before ours — the one to watch — comes in the same read (Go needs a second one).
 */
export async function enqueue(
  calls: EtcdCalls,
  range: LockRange,
  waiterKey: Buffer,
  value: Buffer,
  leaseId: string,
  mode: LockMode,
): Promise<EnqueueOutcome> {
  const response = await calls.txn({
    compare: [
      { key: waiterKey, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 },
      { key: tombstoneKey(range.tombstones, waiterKey), target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 },
    ],
    success: [{ request_put: { key: waiterKey, value, lease: leaseId } }, { request_range: earlierRange(range, mode) }],
    failure: [],
  });
  if (!response.succeeded) return { created: false };
  const revision = BigInt(response.header.revision);
  const kvs = response.responses[1]?.response_range.kvs ?? [];
  const earlier = kvs.filter((kv) => createRevision(kv) < revision);
  return { created: true, revision, blocker: findBlocker(earlier, mode) };
}

/** The outcome of {@link checkTurn}: our key is gone (lease lost, or deleted), or who still blocks us. */
export type TurnOutcome = { readonly gone: true } | { readonly gone: false; readonly blocker: IKeyValue | undefined };

/**
 * Re-checks, in one linearizable transaction, that our key still exists with its create revision
 * (so our lease is alive at this revision: Jepsen found etcd 3.4.3's lock API granting to a waiter
 * whose lease had expired) and who is now ahead of us.
 */
export async function checkTurn(
  calls: EtcdCalls,
  range: LockRange,
  waiterKey: Buffer,
  revision: bigint,
  mode: LockMode,
): Promise<TurnOutcome> {
  const response = await calls.txn({
    compare: [{ key: waiterKey, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: revision.toString() }],
    success: [{ request_range: earlierRange(range, mode, revision - 1n) }],
    failure: [],
  });
  if (!response.succeeded) return { gone: true };
  const earlier = response.responses[0]?.response_range.kvs ?? [];
  return { gone: false, blocker: findBlocker(earlier, mode) };
}

/**
 * The comparison "our key is still as we created it at `revision`": its mod revision is still its
 * create revision. We never write our key again, so any put since (an overwrite, a delete and
 * re-create) means it is someone else's now.
 */
function unchangedSince(waiterKey: Buffer, revision: bigint): ICompare {
  return { key: waiterKey, target: CompareTarget.Mod, result: CompareResult.Equal, mod_revision: revision.toString() };
}

/** True while our key still exists, unchanged since we created it at `revision`. */
export async function stillHeld(calls: EtcdCalls, waiterKey: Buffer, revision: bigint): Promise<boolean> {
  const response = await calls.txn({
    compare: [unchangedSince(waiterKey, revision)],
    // etcd serves a txn whose branches hold no non-serializable range from the member's local state
    // (isTxnSerializable is true for empty branches), so a lagging follower could still show a
    // deleted key. One linearizable range makes the whole txn a linearizable read.
    success: [{ request_range: { key: waiterKey, count_only: true } }],
    failure: [],
  });
  return response.succeeded;
}

/** Deletes our key only if it is still the one we created, unchanged; resolves whether it was. */
export async function deleteOwn(calls: EtcdCalls, waiterKey: Buffer, revision: bigint): Promise<boolean> {
  const response = await calls.txn({
    compare: [unchangedSince(waiterKey, revision)],
    success: [{ request_delete_range: { key: waiterKey } }],
    failure: [],
  });
  return response.succeeded;
}

/**
 * Cleans up after an attempt whose enqueue may or may not have been applied (its reply was lost):
 * writes the tombstone (so a late enqueue is refused) and deletes the key, in one transaction.
 * Waiter names are unique to our lease, so no other client's key can be deleted.
 */
export async function cancelUncertain(calls: EtcdCalls, tombstones: Buffer, waiterKey: Buffer, leaseId: string): Promise<void> {
  await calls.txn({
    compare: [],
    success: [
      { request_put: { key: tombstoneKey(tombstones, waiterKey), value: Buffer.alloc(0), lease: leaseId } },
      { request_delete_range: { key: waiterKey } },
    ],
    failure: [],
  });
}

/** Every key of a lock, oldest first (for `inspect`). */
export async function listWaiters(calls: EtcdCalls, range: LockRange): Promise<IKeyValue[]> {
  const response = await calls.range({
    key: range.start,
    range_end: range.end,
    sort_target: SortTarget.Create,
    sort_order: SortOrder.Ascend,
  });
  return response.kvs;
}

/** The oldest key of a range (by create revision): a lock's first holder, an election's leader. */
export async function firstWaiter(calls: EtcdCalls, range: LockRange): Promise<IKeyValue | undefined> {
  const response = await calls.range({
    key: range.start,
    range_end: range.end,
    sort_target: SortTarget.Create,
    sort_order: SortOrder.Ascend,
    limit: 1,
  });
  return response.kvs[0];
}
