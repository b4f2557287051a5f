import { describeLockProvider } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterAll } from 'vitest';
import { EtcdLockProvider } from '../src/index.js';
import { backendWaiters, deleteLock } from './backend-waiters.js';

const { etcdEndpoints } = topology();
// Reads the keys the providers leave in etcd (and deletes holders' keys for deleteLock).
const raw = new Etcd3({ hosts: [...etcdEndpoints] });
afterAll(() => raw.close());

// Each provider gets a client of its own, so that crashProvider can cut it off like a dead process:
// closing the client stops the keepalives without revoking the lease, and etcd expires it.
const clients = new WeakMap<LockProvider, Etcd3>();

class TestProvider extends EtcdLockProvider {
  readonly #client: Etcd3;
  constructor(client: Etcd3) {
    super({ client, sessionTtlMs: 3_000, keyPrefix: 'fencelock-test/' });
    this.#client = client;
  }
  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      this.#client.close();
    }
  }
}

describeLockProvider({
  name: 'etcd (3-member cluster)',
  createProvider: () => {
    const client = new Etcd3({ hosts: [...etcdEndpoints] });
    const provider = new TestProvider(client);
    clients.set(provider, client);
    return provider;
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
  },
  harness: {
    backendWaiters: backendWaiters(raw, 'fencelock-test/'),
    deleteLock: deleteLock(raw, 'fencelock-test/'),
    crashProvider: async (provider) => {
      clients.get(provider)?.close();
    },
  },
});
