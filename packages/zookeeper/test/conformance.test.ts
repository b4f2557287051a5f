import { describeLockProvider } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { afterAll, it } from 'vitest';
import { ZooKeeperLockProvider, createZooKeeperLockProvider } from '../src/index.js';
import { ELECTIONS_SEGMENT } from '../src/election-paths.js';
import { SEMAPHORES_SEGMENT } from '../src/semaphore-paths.js';
import { dropConnectionForTesting } from '../src/zookeeper-lock-provider.js';
import { RawClientSlot, deleteHolders, expectNoOrphans, rawClient, waitingContenders } from './znodes.js';

const { zkConnectionString } = topology();
// Short sessions keep the expiry cases quick; the shared ensemble runs tickTime 500 (sessions 1–60 s).
const SESSION_TIMEOUT_MS = 3_000;
const ROOT = '/fencelock-conformance';
// For backendWaiters: a client of its own, so that the suite's providers are not disturbed.
const inspector = new RawClientSlot(() => zkConnectionString);
afterAll(() => inspector.close());

describeLockProvider({
  name: 'zookeeper (shared 3-node ensemble)',
  createProvider: () =>
    createZooKeeperLockProvider({ connectionString: zkConnectionString, sessionTimeoutMs: SESSION_TIMEOUT_MS, root: ROOT }),
  expectCapabilities: {
    fencing: 'global',
    lossDetection: true,
    extend: true,
    notify: true,
    fifo: true,
    readWrite: true,
    expiry: 'session',
    ttlResolutionMs: SESSION_TIMEOUT_MS / 3,
    minTtlMs: 1_000,
    deletionNotice: 'watch',
    semaphore: 'single-permit',
    election: 'notified',
  },
  harness: {
    backendWaiters: async (key) => waitingContenders(await inspector.get(), ROOT, key),
    // An operator deleting the holder's znode (zkCli `delete`), through a client of its own.
    async deleteLock(key) {
      const client = await rawClient(zkConnectionString);
      try {
        await deleteHolders(client, ROOT, key);
      } finally {
        client.close();
      }
    },
    // A crashed process: the socket goes away, the session is never closed, the server expires it.
    async crashProvider(provider: LockProvider) {
      if (!(provider instanceof ZooKeeperLockProvider)) throw new Error('not a ZooKeeperLockProvider');
      dropConnectionForTesting(provider);
    },
  },
});

// Registered after the suite, so it runs once every case (and its providers) has finished: every lock
// semaphore and election znode is gone within a session timeout (a crashed client's node waits for
// its session's expiry); the `#semaphores` and `#elections` znodes stay, as the root does.
it('leaves no lock, semaphore or election znodes behind (FAULTS.md L3)', async () => {
  const client = await rawClient(zkConnectionString);
  try {
    await expectNoOrphans(client, `${ROOT}/${SEMAPHORES_SEGMENT}`, SESSION_TIMEOUT_MS + 2_000);
    await expectNoOrphans(client, `${ROOT}/${ELECTIONS_SEGMENT}`, SESSION_TIMEOUT_MS + 2_000);
    await expectNoOrphans(client, ROOT, SESSION_TIMEOUT_MS + 2_000, [SEMAPHORES_SEGMENT, ELECTIONS_SEGMENT]);
  } finally {
    client.close();
  }
}, 30_000);
