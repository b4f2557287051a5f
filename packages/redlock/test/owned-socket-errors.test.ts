/**
 * A socket of a connection the provider opened may emit 'error' twice (Node's TLS socket does when a
 * TLS 1.3 server refuses our client certificate: the alert, then the reset). ioredis listens once;
 * a second error nobody listens for would be thrown and end the user's process. Each master's
 * socket, and each one after its reconnect, gets two errors and is destroyed; locking goes on.
 */
import { alertThenReset, recordSockets } from '@fencelock/test-infra';
import { afterEach, expect, it } from 'vitest';
import { sharedMasters } from './helpers.js';

const { redlockUrls, open } = sharedMasters();
const recorder = recordSockets();
afterEach(() => recorder.stop());

it("every master's connection, and its reconnect, survives two errors on its socket", async () => {
  const provider = open({ keyPrefix: `owned-errors:${crypto.randomUUID()}:` });
  await (await provider.acquire('k')).release();
  for (let round = 0; round < 2; round += 1) {
    const sockets = recorder.sockets.splice(0);
    expect(sockets.length, `round ${round}: a socket per master at least`).toBeGreaterThanOrEqual(redlockUrls.length);
    for (const socket of sockets) alertThenReset(socket);
    await (await provider.acquire('k', { waitMs: 10_000 })).release();
  }
}, 30_000);
