import { describeLockProvider } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterAll } from 'vitest';
import { OwnClientProvider } from './own-client-provider.js';
import { backendWaiters, deleteLock } from './backend-waiters.js';

const { etcdEndpoints } = topology();
// Reads the keys the providers leave in etcd (and deletes holders' keys for deleteLock).
const raw = new Etcd3({ hosts: [...etcdEndpoints] });
afterAll(() => raw.close());


describeLockProvider({
  name: 'etcd (3-member cluster)',
  createProvider: () => {
    // A client of its own, so that crashProvider can cut it off like a dead process.
    return new OwnClientProvider(new Etcd3({ hosts: [...etcdEndpoints] }), { sessionTtlMs: 3_000, keyPrefix: 'fencelock-test/' });
  },
  expectCapabilities: {
    fencing: 'global',
    lossDetection: true,
    extend: true,
    notify: true,
    fifo: true,
    readWrite: true,
    expiry: 'session',
    ttlResolutionMs: 1000,
    minTtlMs: 2000,
    deletionNotice: 'watch',
    semaphore: 'multi-permit',
    election: 'notified',
  },
  harness: {
    backendWaiters: backendWaiters(raw, 'fencelock-test/'),
    deleteLock: deleteLock(raw, 'fencelock-test/'),
    crashProvider: async (provider) => {
      if (provider instanceof OwnClientProvider) provider.client.close();
    },
  },
});
