import { MemoryLockProvider, MemoryLockStore } from '@fencelock/core';
import { describeLockProvider } from '../src/index.js';

// One store shared by every provider of the run, as several clients share one server.
const store = new MemoryLockStore();

describeLockProvider({
  name: 'memory',
  createProvider: () => new MemoryLockProvider({ store }),
  expectCapabilities: {
    fencing: 'global',
    lossDetection: true,
    extend: true,
    notify: true,
    fifo: true,
    readWrite: true,
    expiry: 'per-lock',
    ttlResolutionMs: 1,
    minTtlMs: 1,
    deletionNotice: 'watch',
    semaphore: 'multi-permit',
    election: 'notified',
  },
  harness: {
    backendWaiters: async (key) => store.waiting(key),
    deleteLock: async (key) => {
      store.deleteLock(key);
    },
  },
  shortTtlMs: 300,
});
