/**
 * The conformance suite's fault cases on a dedicated PostgreSQL (test-infra's startPostgresServer,
 * fsync and synchronous_commit on), which this file pauses, kills and restarts: every harness power
 * but `backendWaiters` (waiting providers leave nothing at the server: they poll and LISTEN) and
 * the `kill` outage. That case releases during a crash of the server and expects the release to
 * count once the server is back with its data; advisory locks are not data: the crash ends the
 * holder's session and its lock with it, so `release()` rightly resolves false (the lock was lost,
 * not released). `restartBackend` is that crash, with the tokens checked across it.
 */
import { describeLockProvider } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import { type PostgresServer, type TcpProxy, sleep, startPostgresServer, startTcpProxy } from '@fencelock/test-infra';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createPostgresLockProvider } from '../src/index.js';
import { terminateHolders } from './pg.js';

const SESSION_TTL_MS = 3_000;

let server: PostgresServer;
// Each provider connects through a proxy of its own: blackhole and reset act on the providers'
// links while the server runs on; crashProvider silences one provider as a crashed host would.
const proxies = new Map<LockProvider, TcpProxy>();
beforeAll(async () => {
  server = await startPostgresServer();
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([...proxies.values()].map((proxy) => proxy.close()));
  await server?.stop();
}, 30_000);

/** Runs `work` with an operator's connection of its own (the server may have restarted since the last one). */
async function asOperator<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const setProxies = (mode: 'blackhole' | 'reset' | 'pass'): void => {
  for (const proxy of proxies.values()) proxy.setMode(mode);
};

describeLockProvider({
  name: 'postgres (dedicated server, fault powers)',
  createProvider: async () => {
    const proxy = await startTcpProxy({ targetPort: server.port });
    const provider = createPostgresLockProvider({ connection: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, sessionTtlMs: SESSION_TTL_MS });
    proxies.set(provider, proxy);
    return provider;
  },
  harness: {
    async deleteLock(key) {
      if ((await asOperator((client) => terminateHolders(client, key))) === 0) throw new Error(`nobody holds "${key}"`);
    },
    async crashProvider(provider) {
      const proxy = proxies.get(provider);
      if (proxy === undefined) throw new Error('not a provider of this suite');
      proxy.setMode('blackhole');
    },
    outages: {
      // The postmaster and every session's process stopped: statements queue in the sockets.
      pause: async () => {
        await server.pause();
        return () => server.resume();
      },
      blackhole: async () => {
        setProxies('blackhole');
        return async () => setProxies('pass');
      },
      reset: async () => {
        setProxies('reset');
        return async () => setProxies('pass');
      },
    },
    pauseBackend: async (ms) => {
      await server.pause();
      try {
        await sleep(ms);
      } finally {
        await server.resume();
      }
    },
    // A crash and a restart on the same data dir: tokens must not go backwards.
    restartBackend: async () => {
      await server.kill();
      await server.restart();
    },
  },
});
