import type { LockProvider } from '@fencelock/core';
import { redisCommand, topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { type RedlockLockProviderOptions, createRedlockLockProvider } from '../src/index.js';
import { redlockKeys } from '../src/lock-keys.js';

// The live entries of a master's line of waiters: scored by the master's time (ms) until which each
// lasts, so an entry whose owner stopped renewing it is not counted once it lapsed.
const LIVE_WAITERS_LUA = `
local now = redis.call('TIME')
return redis.call('ZCOUNT', KEYS[1], '(' .. (now[1] * 1000 + math.floor(now[2] / 1000)), '+inf')
`;

/**
 * The conformance harness's `backendWaiters` for providers with `keyPrefix` `prefix` on the masters
 * at `ports()`: the largest number of owners registered in the key's line of waiters on any one
 * master (each waiting acquisition registers on every master that refused it), lapsed entries not
 * counted. A master that does not answer (killed) counts as none.
 */
export function redlockWaiters(ports: () => readonly number[], prefix = ''): (key: string) => Promise<number> {
  return async (key) => {
    const waiters = redlockKeys(prefix, key).waiters;
    const counts = await Promise.all(
      ports().map((port) => redisCommand(port, ['EVAL', LIVE_WAITERS_LUA, '1', waiters]).then(Number, () => 0)),
    );
    return Math.max(0, ...counts);
  };
}

/** The conformance harness's `deleteLock`: an operator's `DEL` of the lock key on every master. */
export function deleteOnMasters(ports: () => readonly number[], prefix = ''): (key: string) => Promise<void> {
  return async (key) => {
    const { lock } = redlockKeys(prefix, key);
    await Promise.all(ports().map((port) => redisCommand(port, ['DEL', lock])));
  };
}

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
