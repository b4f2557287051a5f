import type { LockProvider } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { type RedlockLockProviderOptions, createRedlockLockProvider } from '../src/index.js';

/**
 * Providers over handed-in clients, so a test can "crash" one (drop its connections without any
 * release) — the provider never closes clients it did not create, so the factory closes them.
 */
export function providerFactory(
  urls: () => readonly string[],
  options: Omit<RedlockLockProviderOptions, 'masters'> = {},
): {
  createProvider: () => LockProvider;
  crashProvider: (provider: LockProvider) => Promise<void>;
  closeAll: () => void;
} {
  const clientsOf = new WeakMap<LockProvider, Redis[]>();
  const all: Redis[] = [];
  return {
    createProvider: () => {
      const clients = urls().map(
        (url) => new Redis(url, { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, retryStrategy: (n) => Math.min(n * 20, 200) }),
      );
      for (const client of clients) client.on('error', () => undefined);
      all.push(...clients);
      const provider = createRedlockLockProvider({ defaultTtlMs: 3_000, ...options, masters: clients });
      clientsOf.set(provider, clients);
      const close = provider.close.bind(provider);
      provider.close = async () => {
        await close();
        for (const client of clients) client.disconnect();
      };
      return provider;
    },
    crashProvider: async (provider) => {
      for (const client of clientsOf.get(provider) ?? []) client.disconnect();
    },
    closeAll: () => {
      for (const client of all.splice(0)) client.disconnect();
    },
  };
}

/**
 * `open(options)` makes a provider over the shared masters (`redlockUrls`) that is closed after
 * each test of the calling file; `ports` are the masters' ports, for raw commands.
 */
export function sharedMasters(): {
  redlockUrls: readonly string[];
  ports: readonly number[];
  open: (options?: Partial<RedlockLockProviderOptions>) => LockProvider;
} {
  const { redlockUrls, servers } = topology();
  const opened: LockProvider[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((p) => p.close()));
  });
  return {
    redlockUrls,
    ports: servers.redlock.map((e) => e.port),
    open: (options = {}) => {
      const provider = createRedlockLockProvider({ masters: redlockUrls, ...options });
      opened.push(provider);
      return provider;
    },
  };
}
