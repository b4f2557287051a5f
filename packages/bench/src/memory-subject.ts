/**
 * The in-process provider (`MemoryLockProvider` from `@fencelock/core`) as a bench subject, with one
 * store shared by its sessions (as clients share a server) and a counter probe on that store: the
 * store is the memory provider's "server", so its calls are what the server saw.
 */
import { MemoryLockStore } from '@fencelock/core';
import type { CounterProbe, CounterSnapshot } from './server-counters.js';

const counts = { memory_store_requests: 0, memory_store_queued_grants: 0, memory_store_releases: 0, memory_store_extends: 0 };

/** The store every memory-subject session shares; its calls are counted. */
export const benchMemoryStore: MemoryLockStore = countCalls(new MemoryLockStore());

// Wraps the store's public methods on this one instance (the bench's own store, never a user's):
// each acquire attempt, each grant made to a queued waiter (a wake-up), each release and extend.
function countCalls(store: MemoryLockStore): MemoryLockStore {
  const request = store.request.bind(store);
  const release = store.release.bind(store);
  const extend = store.extend.bind(store);
  store.request = (key, waiter, wait) => {
    counts.memory_store_requests += 1;
    const outcome = request(key, waiter, wait);
    if (outcome !== undefined && 'queued' in outcome) {
      void outcome.queued.then(() => {
        counts.memory_store_queued_grants += 1;
      });
    }
    return outcome;
  };
  store.release = (key, ownerId) => {
    counts.memory_store_releases += 1;
    return release(key, ownerId);
  };
  store.extend = (key, ownerId, ttlMs) => {
    counts.memory_store_extends += 1;
    return extend(key, ownerId, ttlMs);
  };
  return store;
}

/** Counts of calls on {@link benchMemoryStore} (queued grants are counted a microtask after they happen). */
export function memoryStoreProbe(): CounterProbe {
  return {
    source: 'calls on the shared in-process MemoryLockStore',
    read: async (): Promise<CounterSnapshot> => {
      await new Promise((resolve) => setImmediate(resolve)); // let grant callbacks run
      return { ...counts };
    },
  };
}
