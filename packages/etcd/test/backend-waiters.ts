import type { Etcd3 } from 'etcd3';
import { lockName } from '../src/index.js';
import { decodeLockValue } from '../src/lock-value.js';

/**
 * The conformance harness's `backendWaiters` for etcd: how many keys under a lock's range wait,
 * holders not counted (the first key, or every reader before the first writer). Read on `client`,
 * a linearizable range, so a put that was answered is seen.
 */
export function backendWaiters(client: Etcd3, keyPrefix: string): (key: string) => Promise<number> {
  return async (key) => {
    const { kvs } = await client.getAll().prefix(`${lockName(key, keyPrefix, 'escape')}/`).sort('Create', 'Ascend').exec();
    const firstWriter = kvs.findIndex((kv) => decodeLockValue(kv.value)?.mode !== 'shared');
    const holders = firstWriter === 0 ? 1 : firstWriter === -1 ? kvs.length : firstWriter;
    return kvs.length - holders;
  };
}
