/**
 * The conformance suite through a client library handed in (see clients-conformance-*.test.ts): on
 * the single server and on the cluster.
 */
import { describeLockProvider } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { afterAll } from 'vitest';
import { handedClients, type ClientFlavour } from './clients.js';
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

/** The whole suite on the single server, each provider with its own client of `flavour`. */
export function onSingleServer(flavour: ClientFlavour): void {
  const handed = handedClients(() => flavour.standalone(redisUrl));
  describeLockProvider({
    name: `redis (single) through ${flavour.name}`,
    createProvider: handed.createProvider,
    expectCapabilities: EXPECTED_CAPABILITIES,
    harness: { crashProvider: handed.crashProvider, backendWaiters: backendWaiters(onServer(redisPort)), deleteLock: deleteLockKey(onServer(redisPort)) },
    shortTtlMs: 500,
  });
}

/** The whole suite on the cluster, each provider with its own cluster client of `flavour`. */
export function onTheCluster(flavour: ClientFlavour): void {
  const handed = handedClients(() => flavour.cluster(redisClusterUrls));
  describeLockProvider({
    name: `redis (cluster of 3 masters) through ${flavour.name}`,
    createProvider: handed.createProvider,
    expectCapabilities: EXPECTED_CAPABILITIES,
    harness: { crashProvider: handed.crashProvider, backendWaiters: backendWaiters(onCluster(clusterInspector())), deleteLock: deleteLockKey(onCluster(clusterInspector())) },
    shortTtlMs: 500,
  });
}

