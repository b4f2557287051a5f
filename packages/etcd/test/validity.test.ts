/**
 * Validity of an etcd lock: counted from the SEND time of the lease grant or keepalive etcd answered,
 * with the TTL etcd granted, minus core's one clock-drift margin (etcd expires leases by its own
 * clock, which may run a little faster than ours). The send times are read at the real client's
 * lease calls; the server is the shared cluster.
 */
import { randomUUID } from 'node:crypto';
import { driftMarginMs, monotonicNow } from '@fencelock/core/adapter';
import type { Etcd3 } from 'etcd3';
import { expect, it } from 'vitest';
import type { EtcdLockProvider } from '../src/index.js';
import { ownClientProviders } from './own-client.js';

const ownClientProvider = ownClientProviders('fencelock-validity/');
// A long session, so that no scheduled keepalive runs during a case.
const TTL_MS = 30_000;

interface LeaseCalls {
  /** Monotonic times at which a lease grant was sent, with the TTL etcd granted (ms). */
  readonly grants: { readonly sentAt: number; readonly ttlMs: number }[];
  /** Monotonic times at which a keepalive stream was opened (the keepalive is written after). */
  readonly keepalives: number[];
}

/** A provider on a client of its own whose lease grants and keepalives are timed as they are sent. */
function timedProvider(sessionTtlMs: number): { provider: EtcdLockProvider; calls: LeaseCalls } {
  const calls: LeaseCalls = { grants: [], keepalives: [] };
  const timeLeaseCalls = (client: Etcd3): void => {
    const lease = client.leaseClient;
    const grant = lease.leaseGrant.bind(lease);
    lease.leaseGrant = async (request, options) => {
      const sentAt = monotonicNow();
      const response = await grant(request, options);
      calls.grants.push({ sentAt, ttlMs: Number(response.TTL) * 1000 });
      return response;
    };
    const keepAlive = lease.leaseKeepAlive.bind(lease);
    lease.leaseKeepAlive = (options) => {
      calls.keepalives.push(monotonicNow());
      return keepAlive(options);
    };
  };
  return { provider: ownClientProvider(sessionTtlMs, timeLeaseCalls).provider, calls };
}

it('a fresh lock is valid until the lease grant was sent + the granted TTL − the drift margin, no longer', async () => {
  const { provider, calls } = timedProvider(TTL_MS);
  const lock = await provider.acquire(`validity:${randomUUID()}`);
  expect(calls.grants).toHaveLength(1);
  const { sentAt, ttlMs } = calls.grants[0]!;
  expect(ttlMs).toBe(TTL_MS);
  expect(lock.validUntil).toBeLessThanOrEqual(sentAt + ttlMs - driftMarginMs(ttlMs));
  await lock.release();
});

it('an extended lock is valid until the keepalive was sent + the granted TTL − the drift margin, no longer', async () => {
  const { provider, calls } = timedProvider(TTL_MS);
  const lock = await provider.acquire(`validity:${randomUUID()}`);
  const before = lock.validUntil;
  await lock.extend();
  const sentAt = calls.keepalives.at(-1);
  expect(sentAt).toBeDefined();
  expect(lock.validUntil).toBeGreaterThan(before);
  expect(lock.validUntil).toBeLessThanOrEqual(sentAt! + TTL_MS - driftMarginMs(TTL_MS));
  await lock.release();
});
