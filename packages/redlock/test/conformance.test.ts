import { describeLockProvider } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { createRedlockLockProvider } from '../src/index.js';
import { REDLOCK_EXPECTED_CAPABILITIES } from './expected-capabilities.js';

const { redlockUrls } = topology();

// crashProvider needs the provider's connections: providers made for the suite get clients we keep,
// so a "crash" can drop them without releasing anything (the provider never closes clients it was handed).
const clientsOf = new WeakMap<LockProvider, Redis[]>();

describeLockProvider({
  name: 'redlock (5 shared masters)',
  createProvider: () => {
    const clients = redlockUrls.map((url) => new Redis(url, { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false }));
    for (const client of clients) client.on('error', () => undefined);
    const provider = createRedlockLockProvider({ masters: clients, defaultTtlMs: 3_000 });
    clientsOf.set(provider, clients);
    const close = provider.close.bind(provider);
    // The suite closes every provider it made: close the clients we handed it too.
    provider.close = async () => {
      await close();
      for (const client of clients) client.disconnect();
    };
    return provider;
  },
  expectCapabilities: REDLOCK_EXPECTED_CAPABILITIES,
  shortTtlMs: 400,
  harness: {
    async crashProvider(provider) {
      for (const client of clientsOf.get(provider) ?? []) client.disconnect();
    },
  },
});
