import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterEach } from 'vitest';
import { type EtcdLockProvider, createEtcdLockProvider } from '../src/index.js';

/** A provider and the etcd3 client of its own it runs on. */
export interface OwnClientProvider {
  readonly provider: EtcdLockProvider;
  readonly client: Etcd3;
}

/**
 * Makes providers on the shared cluster, each on a client of its own that `instrument` may wrap
 * (to count or time what the provider sends) before the provider uses it. Registers an `afterEach`
 * that closes every provider, then its client.
 */
export function ownClientProviders(keyPrefix: string): (sessionTtlMs: number, instrument?: (client: Etcd3) => void) => OwnClientProvider {
  const hosts = [...topology().etcdEndpoints];
  const made: OwnClientProvider[] = [];
  afterEach(async () => {
    const closing = made.splice(0);
    await Promise.allSettled(closing.map(({ provider }) => provider.close()));
    for (const { client } of closing) client.close();
  });
  return (sessionTtlMs, instrument) => {
    const client = new Etcd3({ hosts });
    instrument?.(client);
    const provider = createEtcdLockProvider({ client, keyPrefix, sessionTtlMs });
    made.push({ provider, client });
    return { provider, client };
  };
}
