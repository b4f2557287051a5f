/**
 * A socket of a connection the provider opened may emit 'error' twice: Node's TLS socket does when
 * a TLS 1.3 server refuses our client certificate (its alert arrives after our side of the
 * handshake, then the reset of the same connection). ioredis listens once; a second error nobody
 * listens for is thrown, and would end the user's process. Here each socket the provider opened —
 * its command connection, its subscriber, every Cluster node's, and each one after a reconnect —
 * gets two errors, then is destroyed (without a listener of its own the second emit throws); the
 * provider goes on locking.
 */
import type net from 'node:net';
import type { LockProvider } from '@fencelock/core';
import { alertThenReset, recordSockets, topology, waitFor, type SocketRecorder } from '@fencelock/test-infra';
import type { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisLockProvider, type RedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';
import { clusterNode } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();

const open: LockProvider[] = [];
let recorder: SocketRecorder | undefined;
afterEach(async () => {
  recorder?.stop();
  await Promise.allSettled(open.splice(0).map((made) => made.close()));
});

function provider(options: RedisLockProviderOptions): RedisLockProvider {
  const made = createRedisLockProvider({ keyPrefix: `owned-errors:${crypto.randomUUID()}:`, requestTimeoutMs: 2_000, ...options });
  open.push(made);
  return made;
}

// A waiter woken by the release: the provider's subscriber connection is open by then.
async function lockAndWake(made: LockProvider, key: string): Promise<void> {
  const held = await made.acquire(key);
  const waiting = made.acquire(key, { waitMs: 10_000 });
  await held.release();
  await (await waiting).release();
}

describe('sockets of connections the provider opened', () => {
  it('single server: the command connection and the subscriber survive two errors each, and so do their reconnects', async () => {
    recorder = recordSockets();
    const { sockets } = recorder;
    const made = provider({ connection: redisUrl });
    await lockAndWake(made, 'k');
    expect(sockets.length, 'the command connection and the subscriber').toBeGreaterThanOrEqual(2);
    const first = sockets.splice(0);
    for (const socket of first) alertThenReset(socket);
    await lockAndWake(made, 'k');
    const client = made.client as Redis;
    expect(first).not.toContain(client.stream);
    expect(sockets).toContain(client.stream);
    for (const socket of sockets.splice(0)) alertThenReset(socket);
    await lockAndWake(made, 'k');
  }, 30_000);

  it("leaves the client's own properties as ioredis made them (an accessor there would put every property of the client in V8's slow mode)", async () => {
    const made = provider({ connection: redisUrl });
    await lockAndWake(made, 'k');
    const descriptor = Object.getOwnPropertyDescriptor(made.client, 'stream');
    expect(descriptor?.get).toBeUndefined();
    expect(descriptor?.value).toBe((made.client as Redis).stream);
  });

  it("cluster: every node's connection survives two errors", async () => {
    const made = provider({ clusterNodes: redisClusterUrls.map(clusterNode) });
    await lockAndWake(made, 'k');
    const nodes = (made.client as Cluster).nodes('all');
    expect(nodes.length).toBeGreaterThan(0);
    for (const node of nodes) if (node.stream !== undefined) alertThenReset(node.stream as net.Socket);
    await waitFor(async () => ((made.client as Cluster).status === 'ready' ? true : undefined), { what: 'the cluster ready again', timeoutMs: 10_000 });
    await lockAndWake(made, 'k');
  }, 30_000);
});
