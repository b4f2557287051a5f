import type { LockProvider } from '@fencelock/core';
import type { SupportedRedisClient } from '@fencelock/redis-shared';
import { Cluster as Ioredis5Cluster, Redis as Ioredis5 } from 'ioredis';
import { Cluster as Ioredis6Cluster, Redis as Ioredis6 } from 'ioredis6';
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { GlideClient, GlideClusterClient, Logger, ProtocolVersion } from '@valkey/valkey-glide';
import { createClient as createNodeRedis6, createCluster as createNodeRedis6Cluster } from 'redis';
import { createClient as createNodeRedis5, createCluster as createNodeRedis5Cluster } from 'redis5';
import { createRedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';
import { clusterNode, dropClient } from './helpers.js';

/**
 * One supported client library (a package at one major version, under one protocol), as the tests
 * make its clients: each connected (or connecting) to the given server or cluster, errors swallowed
 * (the tests read failures from the provider, not from the client's error events).
 */
export interface ClientFlavour {
  readonly name: string;
  /** The protocol its connections speak (`HELLO 3` or not). */
  readonly resp: 2 | 3;
  /**
   * Whether the library says when its connection drops (events), so that the handles turn uncertain
   * at once; GLIDE does not, and a drop is seen only by a request that fails during it.
   */
  readonly reportsDrops: boolean;
  standalone(url: string): Promise<SupportedRedisClient>;
  cluster(urls: readonly string[]): Promise<SupportedRedisClient>;
}

const quiet = <T extends { on(event: 'error', listener: () => void): unknown }>(client: T): T => {
  client.on('error', () => undefined);
  return client;
};

// The settings each library's users would pick for a lock client: a bounded wait through reconnects.
const IOREDIS = { maxRetriesPerRequest: 2 } as const;

const ioredis5: ClientFlavour = {
  name: 'ioredis 5 (RESP2)',
  resp: 2,
  reportsDrops: true,
  standalone: async (url) => quiet(new Ioredis5(url, IOREDIS)),
  cluster: async (urls) => quiet(new Ioredis5Cluster(urls.map(clusterNode), { redisOptions: IOREDIS })),
};

const ioredis6 = (protocol: 2 | 3): ClientFlavour => ({
  name: `ioredis 6 (RESP${protocol})`,
  resp: protocol,
  reportsDrops: true,
  standalone: async (url) => quiet(new Ioredis6(url, { ...IOREDIS, protocol })),
  cluster: async (urls) => quiet(new Ioredis6Cluster(urls.map(clusterNode), { redisOptions: { ...IOREDIS, protocol } })),
});

const iovalkey: ClientFlavour = {
  name: 'iovalkey (RESP2)',
  resp: 2,
  reportsDrops: true,
  standalone: async (url) => quiet(new Valkey(url, IOREDIS)),
  cluster: async (urls) => quiet(new ValkeyCluster(urls.map(clusterNode), { redisOptions: IOREDIS })),
};

// node-redis clients are handed over connected, as its users hold them (one test also hands one over unconnected).
const nodeRedis6 = (RESP: 2 | 3): ClientFlavour => ({
  name: `node-redis 6 (RESP${RESP})`,
  resp: RESP,
  reportsDrops: true,
  standalone: async (url) => {
    const client = quiet(createNodeRedis6({ url, RESP }));
    await client.connect();
    return client;
  },
  cluster: async (urls) => {
    const cluster = quiet(createNodeRedis6Cluster({ rootNodes: urls.map((url) => ({ url })), RESP }));
    await cluster.connect();
    return cluster;
  },
});

const nodeRedis5 = (RESP: 2 | 3): ClientFlavour => ({
  name: `node-redis 5 (RESP${RESP})`,
  resp: RESP,
  reportsDrops: true,
  standalone: async (url) => {
    const client = quiet(createNodeRedis5({ url, RESP }));
    await client.connect();
    return client;
  },
  cluster: async (urls) => {
    const cluster = quiet(createNodeRedis5Cluster({ rootNodes: urls.map((url) => ({ url })), RESP }));
    await cluster.connect();
    return cluster;
  },
});

// GLIDE logs every error reply (a NOSCRIPT the seam recovers from, too) and every closed connection on the console.
Logger.setLoggerConfig('off');

// GLIDE's own request timeout (default 250 ms) is how soon it shows a broken connection (see
// GlideStatus): the provider's request timeout in these tests, at most.
const GLIDE_REQUEST_TIMEOUT_MS = 500;
const glideAddress = (url: string): { host: string; port: number } => clusterNode(url);

const glide = (resp: 2 | 3): ClientFlavour => ({
  name: `Valkey GLIDE 2 (RESP${resp})`,
  resp,
  reportsDrops: false,
  standalone: async (url) =>
    GlideClient.createClient({
      addresses: [glideAddress(url)],
      requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
      protocol: resp === 2 ? ProtocolVersion.RESP2 : ProtocolVersion.RESP3,
    }),
  cluster: async (urls) =>
    GlideClusterClient.createClient({
      addresses: urls.map(glideAddress),
      requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
      protocol: resp === 2 ? ProtocolVersion.RESP2 : ProtocolVersion.RESP3,
    }),
});

/** Every flavour the adapters support and test. */
export const CLIENT_FLAVOURS = {
  ioredis5,
  ioredis6Resp3: ioredis6(3),
  ioredis6Resp2: ioredis6(2),
  iovalkey,
  nodeRedis6Resp3: nodeRedis6(3),
  nodeRedis6Resp2: nodeRedis6(2),
  nodeRedis5Resp3: nodeRedis5(3),
  nodeRedis5Resp2: nodeRedis5(2),
  glideResp3: glide(3),
  glideResp2: glide(2),
} as const;

/**
 * Providers over clients of one flavour, each provider with a client of its own (closed with the
 * provider: the provider never closes a client it was handed), and the crash harness that drops a
 * provider's connection without any release.
 */
export function handedClients(
  open: () => Promise<SupportedRedisClient>,
  options: Omit<RedisLockProviderOptions, 'client' | 'connection' | 'clusterNodes' | 'clusterOptions'> = {},
): { createProvider: () => Promise<LockProvider>; crashProvider: (provider: LockProvider) => Promise<void> } {
  const clientOf = new WeakMap<LockProvider, SupportedRedisClient>();
  return {
    createProvider: async () => {
      const client = await open();
      const provider = createRedisLockProvider({ defaultTtlMs: 2_000, ...options, client });
      clientOf.set(provider, client);
      const close = provider.close.bind(provider);
      provider.close = async () => {
        await close();
        dropClient(client);
      };
      return provider;
    },
    crashProvider: async (provider) => {
      const client = clientOf.get(provider);
      if (client !== undefined) dropClient(client);
    },
  };
}
