import { describeLockProvider } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import type { TcpProxy } from '@fencelock/test-infra';
import { afterAll } from 'vitest';
import { createPostgresLockProvider } from '../src/index.js';
import { proxyToPostgres, rawClient, terminateHolders, urlThrough } from './pg.js';

// Short sessions keep the expiry cases quick: the server ends a silent session after 3 s.
const SESSION_TTL_MS = 3_000;
const TABLE = 'fencelock_conformance_tokens';

// Each provider connects through a proxy of its own, so that crashProvider can silence it the way
// a crashed host would: no FIN, no release; the server ends the session by idle_session_timeout.
const proxies = new Map<LockProvider, TcpProxy>();
const operator = rawClient();
afterAll(async () => {
  await Promise.allSettled([...proxies.values()].map((proxy) => proxy.close()));
  await (await operator).end();
});

describeLockProvider({
  name: 'postgres (shared server)',
  createProvider: async () => {
    const proxy = await proxyToPostgres();
    const provider = createPostgresLockProvider({ connection: urlThrough(proxy), sessionTtlMs: SESSION_TTL_MS, table: TABLE });
    proxies.set(provider, proxy);
    return provider;
  },
  expectCapabilities: {
    fencing: 'per-key',
    lossDetection: true,
    extend: true,
    notify: true,
    fifo: false,
    readWrite: true,
    expiry: 'session',
    ttlResolutionMs: 1,
    minTtlMs: 1_000,
    deletionNotice: 'watch',
    semaphore: 'multi-permit',
    election: 'polled',
  },
  harness: {
    // An operator ending the holder's session (pg_terminate_backend): nothing else can take a
    // session advisory lock away from its holder.
    async deleteLock(key) {
      if ((await terminateHolders(await operator, key)) === 0) throw new Error(`nobody holds "${key}"`);
    },
    // A crashed host: the socket goes silent, nothing is released, the server's idle timeout ends it.
    async crashProvider(provider) {
      const proxy = proxies.get(provider);
      if (proxy === undefined) throw new Error('not a provider of this suite');
      proxy.setMode('blackhole');
    },
  },
});
