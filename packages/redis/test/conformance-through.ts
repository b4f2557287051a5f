/**
 * The conformance suite through a client library handed in (see clients-conformance-*.test.ts): on
 * the single server and on the cluster; the whole suite for the first client of each family, the
 * seam cases for the others (`seamOnly`, see seam-cases.ts for why).
 */
import { describeLockProvider } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { afterAll } from 'vitest';
import { handedClients, type ClientFlavour } from './clients.js';
import { describeSeamCases } from './seam-cases.js';
import { EXPECTED_CAPABILITIES, backendWaiters, deleteLockKey, newCluster, onCluster, onServer } from './helpers.js';

const { redisUrl, redisClusterUrls } = topology();
const redisPort = Number(new URL(redisUrl).port || 6379);
// Reads the waiter registries for the harness (never handed to a provider); opened on first use.
let inspector: ReturnType<typeof newCluster> | undefined;
const clusterInspector = (): ReturnType<typeof newCluster> => {
  if (inspector === undefined) {
    inspector = newCluster(redisClusterUrls);
    afterAll(() => inspector?.disconnect());
  }
  return inspector;
};

/** How much of the suite a client runs: all of it, or the cases that touch the seam. */
export type Coverage = 'whole suite' | 'seam cases';

function describeWith(coverage: Coverage, name: string, register: () => void): void {
  if (coverage === 'seam cases') describeSeamCases(name, register);
  else register();
}

/** The suite on the single server, each provider with its own client of `flavour`. */
export function onSingleServer(flavour: ClientFlavour, coverage: Coverage = 'whole suite'): void {
  const handed = handedClients(() => flavour.standalone(redisUrl));
  describeWith(coverage, flavour.name, () => describeLockProvider({
    name: `redis (single) through ${flavour.name}`,
    createProvider: handed.createProvider,
    expectCapabilities: EXPECTED_CAPABILITIES,
    harness: { crashProvider: handed.crashProvider, backendWaiters: backendWaiters(onServer(redisPort)), deleteLock: deleteLockKey(onServer(redisPort)) },
    shortTtlMs: 500,
  }));
}

/** The suite on the cluster, each provider with its own cluster client of `flavour`. */
export function onTheCluster(flavour: ClientFlavour, coverage: Coverage = 'whole suite'): void {
  const handed = handedClients(() => flavour.cluster(redisClusterUrls));
  describeWith(coverage, flavour.name, () => describeLockProvider({
    name: `redis (cluster of 3 masters) through ${flavour.name}`,
    createProvider: handed.createProvider,
    expectCapabilities: EXPECTED_CAPABILITIES,
    harness: { crashProvider: handed.crashProvider, backendWaiters: backendWaiters(onCluster(clusterInspector())), deleteLock: deleteLockKey(onCluster(clusterInspector())) },
    shortTtlMs: 500,
  }));
}

