/**
 * The server decides the session timeout (it clamps the request into its [minSessionTimeout,
 * maxSessionTimeout]): keepalives, validity, `ttlResolutionMs` and `defaultTtlMs` follow the timeout
 * it granted, not the one asked for. A dedicated one-node server with a narrow range (2–3 s at
 * tickTime 500) makes the clamp large and the consequence quick to see: keepalives timed from a
 * 30 s request would come every 10 s, long after the granted 3 s session's deadline has passed.
 */
import { nextEvent } from '@fencelock/conformance';
import type { LockHandle } from '@fencelock/core';
import { type ZooKeeperEnsemble, startZooKeeperEnsemble } from '@fencelock/test-infra';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, type ZooKeeperLockProviderOptions, createZooKeeperLockProvider } from '../src/index.js';

const MIN_GRANTED_MS = 2_000;
const MAX_GRANTED_MS = 3_000;
const ROOT = '/fencelock-granted';
let server: ZooKeeperEnsemble | undefined;
const providers: ZooKeeperLockProvider[] = [];

beforeAll(async () => {
  server = await startZooKeeperEnsemble({ size: 1, tickTime: 500, minSessionTimeout: MIN_GRANTED_MS, maxSessionTimeout: MAX_GRANTED_MS });
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(providers.map((provider) => provider.close()));
  await server?.stop();
}, 30_000);

function provider(options: Omit<ZooKeeperLockProviderOptions, 'connectionString' | 'root'>): ZooKeeperLockProvider {
  if (server === undefined) throw new Error('the server did not start');
  const made = createZooKeeperLockProvider({ connectionString: server.connectionString, root: ROOT, ...options });
  providers.push(made);
  return made;
}

/** Resolves once keepalives carried `lock` past `until`; rejects if it is lost first. */
async function renewedPast(locks: ZooKeeperLockProvider, lock: LockHandle, until: number, ms: number): Promise<void> {
  const lost = nextEvent(locks, 'lost', (event) => event.ownerId === lock.ownerId, ms).then((event) => {
    throw new Error(`the lock was lost (${event.error.code} ${event.error.reason ?? ''}) before its keepalives renewed it past ${until}`);
  });
  const renewed = nextEvent(locks, 'extended', (event) => event.ownerId === lock.ownerId && event.validUntil > until, ms);
  await Promise.race([renewed, lost]);
  lost.catch(() => undefined);
}

it.each([
  { name: 'default request timeout', options: {} },
  { name: 'requestTimeoutMs 20 s, shortened with the clamp', options: { requestTimeoutMs: 20_000 } },
])('30 s asked, 3 s granted ($name): keepalives keep the lock past two granted timeouts', async ({ options }) => {
  const locks = provider({ sessionTimeoutMs: 30_000, ...options });
  const lock = await locks.acquire(`clamped-down:${crypto.randomUUID()}`);
  // Validity counts from the send time of a request answered during the acquire, with the granted timeout.
  expect(lock.validUntil).toBeLessThanOrEqual(performance.now() + MAX_GRANTED_MS);
  // Timed from the 30 s request, the first keepalive would leave after the 3 s deadline: lost.
  await renewedPast(locks, lock, lock.validUntil + 2 * MAX_GRANTED_MS, 4 * MAX_GRANTED_MS);
  expect(lock.isHeld()).toBe(true);
  expect(await lock.release()).toBe(true);
}, 30_000);

it.each([
  { name: '30 s asked, 3 s granted', options: { sessionTimeoutMs: 30_000 }, granted: MAX_GRANTED_MS, keepaliveMs: MAX_GRANTED_MS / 3 },
  { name: '1 s asked, 2 s granted', options: { sessionTimeoutMs: 1_000 }, granted: MIN_GRANTED_MS, keepaliveMs: Math.ceil(MIN_GRANTED_MS / 3) },
])('$name: defaultTtlMs and capabilities.ttlResolutionMs report the grant once connected', async ({ options, granted, keepaliveMs }) => {
  const locks = provider(options);
  // Before the first connection only the request is known.
  expect(locks.defaultTtlMs).toBe(options.sessionTimeoutMs);
  const lock = await locks.acquire(`reported:${crypto.randomUUID()}`);
  expect(locks.defaultTtlMs).toBe(granted);
  expect(locks.capabilities.ttlResolutionMs).toBe(keepaliveMs);
  expect(await lock.release()).toBe(true);
}, 30_000);
