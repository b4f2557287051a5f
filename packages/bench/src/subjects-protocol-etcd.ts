/**
 * The protocol twin of `@fencelock/etcd`: a raw etcd3 loop that sends exactly the requests the
 * provider sends on an uncontended acquire + release, with no library around them. Beside the
 * provider it splits the gap to the raw transaction pair (`etcd/raw-txn`) in two, as the Redis twins
 * do (`subjects-protocol.ts`): twin ÷ raw is what the protocol costs (a waiter key under the session
 * lease at `<lock>/<lease hex>`, as etcd's own Mutex names it, so that `etcdctl lock` and fencelock
 * exclude each other; a tombstone check; the read of who is ahead over the whole `<lock>/` range;
 * a release guarded by the key's revision), fencelock ÷ twin is what the library adds.
 *
 * A hold shorter than the provider's holder-watch delay opens no watch, so the cycle is two
 * transactions, built by the adapter's own request builders (`revision-queue.ts`), each with a
 * grpc deadline as the provider sets one. The lease is kept alive by etcd3, as the provider's session
 * keeps its own. `test/protocol-twin-etcd.test.ts` checks the requests against the provider's.
 */
import { randomUUID } from 'node:crypto';
import { Etcd3, type ITxnRequest, type ITxnResponse, type Lease } from 'etcd3';
// The adapter's key naming, values and transactions are internal to it: read from its source, so
// that they are the very code the provider runs (the bench lives in the same repository).
import type { EtcdCalls } from '../../etcd/src/etcd-calls.js';
import { lockName } from '../../etcd/src/key-encoding.js';
import { encodeLockValue } from '../../etcd/src/lock-value.js';
import { deleteOwn, enqueue, lockRange, type LockRange } from '../../etcd/src/revision-queue.js';
import { SESSION_TTL_MS, type LockSession } from './subjects.js';

/** The key prefix the twin locks under: its own, apart from the provider's `fencelock-bench/`. */
export const ETCD_TWIN_KEY_PREFIX = 'fencelock-bench-twin/';

// The provider's default per-request timeout, which it sends as each request's grpc deadline.
const REQUEST_TIMEOUT_MS = 5_000;

/** The one call the adapter's transaction builders make, on a raw etcd3 client. */
type TxnOnly = Pick<EtcdCalls, 'txn'>;

/** Sends `request` as the provider's `EtcdCalls.txn` does: a txn with a grpc deadline. */
function rawTxn(client: Etcd3): TxnOnly {
  return {
    txn: (request: ITxnRequest): Promise<ITxnResponse> => client.kv.txn(request, { deadline: Date.now() + REQUEST_TIMEOUT_MS }),
  };
}

/** A session of the twin on the etcd cluster at `hosts`: one lease, as the provider's session. */
export async function etcdProtocolTwinSession(hosts: readonly string[]): Promise<LockSession> {
  const client = new Etcd3({ hosts: [...hosts] });
  // The builders only call `txn`: the rest of `EtcdCalls` is the provider's, not sent here.
  const calls = rawTxn(client) as EtcdCalls;
  let lease: Lease | undefined;
  try {
    lease = client.lease(SESSION_TTL_MS / 1000);
    const leaseId = await lease.grant();
    const leaseHex = BigInt(leaseId).toString(16);
    const ranges = new Map<string, LockRange>();
    return {
      async lock(key) {
        let range = ranges.get(key);
        if (range === undefined) ranges.set(key, (range = lockRange(lockName(key, ETCD_TWIN_KEY_PREFIX, 'escape'), ETCD_TWIN_KEY_PREFIX)));
        const waiterKey = Buffer.from(`${range.prefix.toString('utf8')}${leaseHex}`, 'utf8');
        const value = encodeLockValue({ ownerId: randomUUID(), mode: 'exclusive', metadata: undefined });
        const enqueued = await enqueue(calls, range, waiterKey, value, leaseId, 'exclusive');
        if (!enqueued.created) throw new Error(`etcd protocol twin: ${key} already has our waiter key`);
        if (enqueued.blocker !== undefined) {
          await deleteOwn(calls, waiterKey, enqueued.revision);
          throw new Error(`etcd protocol twin: lock ${key} is held`);
        }
        const { revision } = enqueued;
        return async () => {
          await deleteOwn(calls, waiterKey, revision);
        };
      },
      close: async () => {
        await lease?.revoke().catch(() => undefined);
        client.close();
      },
    };
  } catch (error) {
    await lease?.revoke().catch(() => undefined);
    client.close();
    throw error;
  }
}
