import { escapeKeySegment } from '@fencelock/etcd';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { describeHoldEndToEnd } from './support/hold-suite.js';

// etcd: the holder's key is `fencelock/<escaped key>/<lease id>`; deleting it from outside (as
// `etcdctl del --prefix` would) loses the lock while the session lease lives on.
describeHoldEndToEnd(
  'etcd',
  async () => {
    const { etcdEndpoints } = topology();
    const client = new Etcd3({ hosts: [...etcdEndpoints] });
    return {
      env: { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_ENDPOINTS: etcdEndpoints.join(',') },
      shortLifetime: ['--ttl', '2s'],
      removeLock: async (key) => {
        const deleted = await client.delete().prefix(`fencelock/${escapeKeySegment(key)}/`);
        if (deleted.deleted !== '1') throw new Error(`expected to delete one holder key of ${key}, deleted ${deleted.deleted}`);
      },
      close: async () => {
        client.close();
      },
    };
  },
  { fencing: 'global', full: true, readWrite: true },
);
