import { MemoryLockProvider, MemoryLockStore } from '@fencelock/core';
import { describeLockProvider } from '../../src/index.js';

// The control: the same settings on a healthy provider must pass, or the failures above prove nothing.
const store = new MemoryLockStore();
describeLockProvider({
  name: 'healthy-control',
  createProvider: () => new MemoryLockProvider({ store }),
  harness: {
    deleteLock: async (key) => {
      store.deleteLock(key);
    },
  },
  shortTtlMs: 200,
  timeScale: 0.5,
  concurrency: { clients: 4, rounds: 5 },
});
