import type { Etcd3, IKeyValue } from 'etcd3';
import { lockName } from '../src/index.js';
import { decodeLockValue } from '../src/lock-value.js';

/** Every key of `key`'s lock, oldest first, and how many of them hold it (the rest wait). */
async function lockKeys(client: Etcd3, keyPrefix: string, key: string): Promise<{ kvs: IKeyValue[]; holders: number }> {
  const { kvs } = await client.getAll().prefix(`${lockName(key, keyPrefix, 'escape')}/`).sort('Create', 'Ascend').exec();
  // The first key holds it, or every reader before the first writer.
  const firstWriter = kvs.findIndex((kv) => decodeLockValue(kv.value)?.mode !== 'shared');
  const holders = firstWriter === 0 ? 1 : firstWriter === -1 ? kvs.length : firstWriter;
  return { kvs, holders };
}

/**
 * The conformance harness's `backendWaiters` for etcd: how many keys under a lock's range wait,
 * holders not counted. Read on `client`, a linearizable range, so a put that was answered is seen.
 */
export function backendWaiters(client: Etcd3, keyPrefix: string): (key: string) => Promise<number> {
  return async (key) => {
    const { kvs, holders } = await lockKeys(client, keyPrefix, key);
    return kvs.length - holders;
  };
}

/**
 * The conformance harness's `deleteLock` for etcd: deletes the keys that hold `key`'s lock, as an
 * operator's `etcdctl del` would, in one transaction on `client`; waiters' keys stay.
 */
export function deleteLock(client: Etcd3, keyPrefix: string): (key: string) => Promise<void> {
  return async (key) => {
    const { kvs, holders } = await lockKeys(client, keyPrefix, key);
    if (holders === 0) throw new Error(`lock "${key}" has no holder to delete`);
    await client.kv.txn({
      compare: [],
      success: kvs.slice(0, holders).map((kv) => ({ request_delete_range: { key: kv.key } })),
      failure: [],
    });
  };
}
