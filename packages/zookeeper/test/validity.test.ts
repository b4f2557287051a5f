/**
 * Validity of a ZooKeeper lock: counted from the SEND time of the last request the server answered,
 * with the session timeout the server granted, minus core's one clock-drift margin (1 % + 2 ms). The
 * send times are read at the real client's calls; the server is the shared ensemble.
 */
import { randomUUID } from 'node:crypto';
import { driftMarginMs, monotonicNow } from '@fencelock/core/adapter';
import { topology } from '@fencelock/test-infra';
import type { Client } from 'node-zookeeper-client';
import { afterAll, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider } from '../src/index.js';
import { rawClient } from './znodes.js';

// A long session, so that no scheduled keepalive (a third of it after the last answer) runs in a case,
// and the margin is large: 1 % of 30 s + 2 ms = 302 ms (the old rule, 2 % + 10 ms, took 610 ms).
const SESSION_TIMEOUT_MS = 30_000;
const ROOT = '/fencelock-validity';
const opened: { client: Client; provider: ZooKeeperLockProvider }[] = [];

afterAll(async () => {
  for (const { client, provider } of opened.splice(0)) {
    await provider.close();
    client.close();
  }
});

/** A provider on a client of its own whose `exists` calls (keepalives and node checks) are timed as they are sent. */
async function timedProvider(): Promise<{ provider: ZooKeeperLockProvider; granted: number; sends: number[] }> {
  const client = await rawClient(topology().zkConnectionString, { sessionTimeout: SESSION_TIMEOUT_MS });
  const sends: number[] = [];
  const exists = client.exists.bind(client) as (...args: unknown[]) => void;
  (client as unknown as { exists: (...args: unknown[]) => void }).exists = (...args: unknown[]) => {
    sends.push(monotonicNow());
    exists(...args);
  };
  const provider = createZooKeeperLockProvider({ client, root: ROOT });
  opened.push({ client, provider });
  return { provider, granted: client.getSessionTimeout(), sends };
}

it('a fresh lock is valid until the send time of an answered request + the granted timeout − the drift margin, no longer', async () => {
  const { provider, granted, sends } = await timedProvider();
  const before = monotonicNow();
  const lock = await provider.acquire(`validity:${randomUUID()}`);
  // The given client was connected before: only requests of this provider count, the first an exists.
  expect(sends.length).toBeGreaterThan(0);
  expect(lock.validUntil).toBeGreaterThanOrEqual(before + granted - driftMarginMs(granted));
  expect(lock.validUntil).toBeLessThanOrEqual(monotonicNow() + granted - driftMarginMs(granted));
  await lock.release();
});

it('extend() renews validity to the keepalive send time + the granted timeout − the drift margin', async () => {
  const { provider, granted, sends } = await timedProvider();
  const lock = await provider.acquire(`validity:${randomUUID()}`);
  const before = monotonicNow();
  await lock.extend();
  // The keepalive and the node check were sent during extend(); validity counts from the keepalive's send.
  const sent = sends.filter((at) => at >= before);
  expect(sent.length).toBeGreaterThanOrEqual(2);
  expect(lock.validUntil).toBeGreaterThanOrEqual(before + granted - driftMarginMs(granted));
  expect(lock.validUntil).toBeLessThanOrEqual(Math.max(...sent) + granted - driftMarginMs(granted));
  await lock.release();
});
