import { describeLockProvider } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { afterAll } from 'vitest';
import { describeSeamCases } from '../../redis/test/seam-cases.js';
import { createRedlockLockProvider } from '../src/index.js';
import { REDLOCK_EXPECTED_CAPABILITIES } from './expected-capabilities.js';
import { deleteOnMasters, providerFactory, redlockWaiters } from './helpers.js';

const { redlockUrls, servers } = topology();
const ports = (): readonly number[] => servers.redlock.map((endpoint) => endpoint.port);
const backendWaiters = redlockWaiters(ports);
const deleteLock = deleteOnMasters(ports);

// Handed-in clients, so the crash harness can drop a provider's connections without any release.
const handed = providerFactory(() => redlockUrls);
afterAll(() => handed.closeAll());

describeLockProvider({
  name: 'redlock (5 shared masters, clients handed in)',
  createProvider: handed.createProvider,
  expectCapabilities: REDLOCK_EXPECTED_CAPABILITIES,
  shortTtlMs: 400,
  harness: { crashProvider: handed.crashProvider, backendWaiters, deleteLock },
});

// The path most users take: URLs, clients created, owned and closed by the provider. The same
// library and seam as the run above, which runs the whole suite: what differs is who opens and
// closes the clients, which the seam cases cover (see @fencelock/redis' test/seam-cases.ts).
describeSeamCases('redlock, owned ioredis 5 clients', () =>
  describeLockProvider({
    name: 'redlock (5 shared masters, owned clients from URLs)',
    createProvider: () => createRedlockLockProvider({ masters: redlockUrls, defaultTtlMs: 3_000 }),
    expectCapabilities: REDLOCK_EXPECTED_CAPABILITIES,
    shortTtlMs: 400,
    harness: { backendWaiters, deleteLock },
  }),
);
