/**
 * The in-process provider (`MemoryLockProvider` from `@fencelock/core`) as a bench subject, with one
 * store shared by its sessions (as clients share a server) and a counter probe on that store: the
 * store is the memory provider's "server", so its calls are what the server saw. Beside it, a plain
 * in-process mutex per key (async-mutex), so that what core itself costs per lock shows as a ratio.
 */
import { MemoryLockStore } from '@fencelock/core';
import { Mutex } from 'async-mutex';
import type { CounterProbe, CounterSnapshot } from './server-counters.js';
import type { LockSession, Subject } from './subjects.js';

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

/**
 * async-mutex's `Mutex`, one per key, in one process: mutual exclusion and nothing else (no TTL, no
 * owner check, no fencing token, no handle). It does not wait here: like the raw baselines, `lock`
 * throws when the key is held, so it runs the uncontended, 64-key and allocation scenarios only.
 */
export function asyncMutexSubject(): Subject {
  return {
    id: 'memory/async-mutex',
    backend: 'memory',
    kind: 'peer',
    label: 'async-mutex Mutex per key (in-process, no TTL or token)',
    waits: false,
    inProcess: true,
    package: 'async-mutex',
    open: async (): Promise<LockSession> => {
      const mutexes = new Map<string, Mutex>();
      return {
        async lock(key) {
          let mutex = mutexes.get(key);
          if (mutex === undefined) mutexes.set(key, (mutex = new Mutex()));
          if (mutex.isLocked()) throw new Error(`async-mutex: ${key} is held`);
          const release = await mutex.acquire();
          return async () => {
            release();
          };
        },
        close: async () => {
          mutexes.clear();
        },
      };
    },
  };
}
