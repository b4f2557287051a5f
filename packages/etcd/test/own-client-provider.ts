import type { Etcd3 } from 'etcd3';
import { EtcdLockProvider, type EtcdLockProviderOptions } from '../src/index.js';

/**
 * A provider on a client of its own, closed with it: a test's "crash" closes the client, which stops
 * the keepalives without revoking the lease, as a dead process would.
 */
export class OwnClientProvider extends EtcdLockProvider {
  readonly client: Etcd3;
  constructor(client: Etcd3, options: Omit<EtcdLockProviderOptions, 'client' | 'connection'> = {}) {
    super({ client, ...options });
    this.client = client;
  }
  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      this.client.close();
    }
  }
}
