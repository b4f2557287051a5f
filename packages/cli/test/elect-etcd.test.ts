import { electionName } from '@fencelock/etcd';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { describeElectEndToEnd } from './support/elect-suite.js';

// etcd: a candidate's key is `fencelock/%election/<escaped name>/<lease hex>`; deleting the leader's
// (as `etcdctl del --prefix` would) loses the leadership while its session lease lives on.
describeElectEndToEnd('etcd', async () => {
  const { etcdEndpoints } = topology();
  const client = new Etcd3({ hosts: [...etcdEndpoints] });
  return {
    env: { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_ENDPOINTS: etcdEndpoints.join(',') },
    shortLifetime: ['--ttl', '2s'],
    removeLeader: async (name) => {
      const deleted = await client.delete().prefix(`${electionName(name, 'fencelock/')}/`);
      if (deleted.deleted !== '1') throw new Error(`expected to delete one candidate key of ${name}, deleted ${deleted.deleted}`);
    },
    close: async () => {
      client.close();
    },
  };
});
