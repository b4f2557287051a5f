import type { LockProvider } from '@fencelock/core';
import type { GlideStandaloneClient, IoredisFamilyClient, NodeRedisFamilyClient } from '@fencelock/redis-shared';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { Redis as Ioredis5 } from 'ioredis';
import { Redis as Ioredis6 } from 'ioredis6';
import { Redis as Valkey } from 'iovalkey';
import { createClient as createNodeRedis6 } from 'redis';
import { createClient as createNodeRedis5 } from 'redis5';
import { type RedlockLockProviderOptions, createRedlockLockProvider } from '../src/index.js';

/** A standalone client of one supported library (one major version, one protocol), as a master's client. */
export type MasterClient = IoredisFamilyClient | NodeRedisFamilyClient | GlideStandaloneClient;

/** One supported library, as the tests make a master's client with it (connecting, errors swallowed). */
export interface MasterFlavour {
  readonly name: string;
  client(url: string): MasterClient | Promise<MasterClient>;
}

// Redlock's own settings for the clients it opens: a dead master fails fast.
const IOREDIS = { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, retryStrategy: (n: number) => Math.min(n * 20, 200) } as const;

function quiet<T extends { on(event: 'error', listener: () => void): unknown }>(client: T): T {
  client.on('error', () => undefined);
  return client;
}

// GLIDE logs every error reply (a NOSCRIPT the seam recovers from, too) on the console.
Logger.setLoggerConfig('off');

// GLIDE shows a broken connection by timing requests out (its `requestTimeout`): Redlock's request
// timeout at most. A GLIDE client is made connected (createClient resolves once it is).
const glideMaster = async (url: string): Promise<MasterClient> => {
  const { hostname, port } = new URL(url);
  return GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }], requestTimeout: 250 });
};

/** Every supported library, standalone (Redlock takes no cluster client). */
export const MASTER_FLAVOURS: readonly MasterFlavour[] = [
  { name: 'ioredis 5 (RESP2)', client: (url) => quiet(new Ioredis5(url, IOREDIS)) },
  { name: 'ioredis 6 (RESP3)', client: (url) => quiet(new Ioredis6(url, { ...IOREDIS, protocol: 3 })) },
  { name: 'iovalkey (RESP2)', client: (url) => quiet(new Valkey(url, IOREDIS)) },
  // node-redis clients are handed over unconnected: the provider connects a client nobody connected.
  // No offline queue: a request to a master that is down fails at once, as Redlock wants.
  { name: 'node-redis 6 (RESP3)', client: (url) => quiet(createNodeRedis6({ url, RESP: 3, disableOfflineQueue: true })) },
  { name: 'node-redis 5 (RESP2)', client: (url) => quiet(createNodeRedis5({ url, RESP: 2, disableOfflineQueue: true })) },
  { name: 'Valkey GLIDE 2 (RESP3)', client: glideMaster },
];

/** Drops a client's connection at once, whatever its library. */
export function dropMasterClient(client: MasterClient): void {
  if ('status' in client) (client as unknown as { disconnect(): void }).disconnect();
  else if ('customCommand' in client) (client as unknown as { close(): void }).close();
  else if (client.isOpen) (client as unknown as { destroy(): void }).destroy();
}

/**
 * Providers over handed-in clients of `flavour` (one per master, closed with the provider: it never
 * closes clients it was handed), and the crash harness that drops them without any release.
 */
export function flavourProviders(
  flavour: MasterFlavour,
  urls: () => readonly string[],
  options: Omit<RedlockLockProviderOptions, 'masters'> = {},
): { createProvider: () => Promise<LockProvider>; crashProvider: (provider: LockProvider) => Promise<void> } {
  const clientsOf = new WeakMap<LockProvider, MasterClient[]>();
  return {
    createProvider: async () => {
      const clients = await Promise.all(urls().map((url) => flavour.client(url)));
      const provider = createRedlockLockProvider({ defaultTtlMs: 3_000, ...options, masters: clients });
      clientsOf.set(provider, clients);
      const close = provider.close.bind(provider);
      provider.close = async () => {
        await close();
        for (const client of clients) dropMasterClient(client);
      };
      return provider;
    },
    crashProvider: async (provider) => {
      for (const client of clientsOf.get(provider) ?? []) dropMasterClient(client);
    },
  };
}
