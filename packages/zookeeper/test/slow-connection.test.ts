/**
 * A connection that is slow to come (a server busy after a pause, a session made anew after a
 * process pause): an acquire that may wait waits for it within its own bound, as it waits for the
 * lock; a try, or an acquire with a shorter wait, still fails after one request timeout. The proxy
 * accepts the client's connection and forwards nothing until it is switched back to `pass`.
 */
import { randomUUID } from 'node:crypto';
import { isPending, within } from '@fencelock/conformance';
import { sleep } from '@fencelock/core/adapter';
import { type TcpProxy, startTcpProxy, topology, waitFor } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider } from '../src/index.js';

const ROOT = '/fencelock-slow-connection';
const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
const SESSION_TIMEOUT_MS = 6_000;
// Explicit, so the case does not depend on the default's derivation from the session timeout.
const REQUEST_TIMEOUT_MS = 1_000;
let proxy: TcpProxy | undefined;
const providers: ZooKeeperLockProvider[] = [];

beforeAll(async () => {
  proxy = await startTcpProxy({ targetPort: Number(server.slice(server.lastIndexOf(':') + 1)) });
});

afterAll(async () => {
  proxy?.setMode('pass');
  await Promise.allSettled(providers.map((provider) => provider.close()));
  await proxy?.close();
}, 30_000);

function provider(): ZooKeeperLockProvider {
  const made = createZooKeeperLockProvider({
    connectionString: `127.0.0.1:${proxy!.port}`,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    root: ROOT,
  });
  providers.push(made);
  return made;
}

describe('zookeeper: a connection slow to come', () => {
  it('an acquire that may wait longer than a request timeout waits for the connection, and is granted once it comes', async () => {
    proxy!.setMode('blackhole');
    const locks = provider();
    const key = `slow-connection:${randomUUID()}`;
    const acquiring = locks.acquire(key, { waitMs: 20_000 });
    await waitFor(async () => (proxy!.connectionCount > 0 ? true : undefined), { what: 'the client to connect to the proxy', timeoutMs: 5_000, intervalMs: 10 });
    // Observed below; a failure meanwhile must not surface as an unhandled rejection.
    acquiring.catch(() => undefined);
    // Longer than a request timeout: an acquire bound by the request timeout alone has failed by now.
    await sleep(REQUEST_TIMEOUT_MS * 1.5);
    expect(await isPending(acquiring)).toBe(true);
    proxy!.setMode('pass');
    const lock = await within(acquiring, 10_000, 'the acquire once the connection came');
    expect(lock.isHeld()).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it('a try while the connection does not come fails with BACKEND_UNAVAILABLE after one request timeout', async () => {
    proxy!.setMode('blackhole');
    const locks = provider();
    const key = `slow-connection-try:${randomUUID()}`;
    const trying = locks.tryAcquire(key);
    const failed = expect(trying).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE', key });
    await within(failed, REQUEST_TIMEOUT_MS * 10, 'the try to fail');
    proxy!.setMode('pass');
  });
});
