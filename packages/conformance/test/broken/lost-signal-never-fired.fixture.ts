import { MemoryLockStore } from '@fencelock/core';
import { describeLockProvider } from '../../src/index.js';
import { BROKEN_PROVIDERS } from './broken-providers.js';

const store = new MemoryLockStore();
describeLockProvider({
  name: 'lost-signal-never-fired',
  createProvider: () => BROKEN_PROVIDERS['lost-signal-never-fired'](store),
  shortTtlMs: 200,
  timeScale: 0.5,
  concurrency: { clients: 4, rounds: 5 },
  // The sections whose cases must fail it (see suite-catches-broken-providers.test.ts).
  sections: ['lifecycle', 'faults'],
});
