import { MemoryLockStore } from '@fencelock/core';
import { describeLockProvider } from '../../src/index.js';
import { BROKEN_PROVIDERS } from './broken-providers.js';

const store = new MemoryLockStore();
describeLockProvider({
  name: 'double-grant-after-expiry',
  createProvider: () => BROKEN_PROVIDERS['double-grant-after-expiry'](store),
  shortTtlMs: 200,
  timeScale: 0.5,
  concurrency: { clients: 4, rounds: 5 },
  // The sections whose cases must fail it (see suite-catches-broken-providers.test.ts).
  sections: ['faults'],
});
