/**
 * The coordination subjects: counting semaphores (and, as adapters gain them, leader elections)
 * beside the library users would otherwise pick on the same server. A semaphore subject's `lock`
 * takes one permit of a semaphore of {@link SEMAPHORE_LIMIT} permits, so the uncontended and
 * contended loops of the lock scenarios measure it unchanged.
 */
import { createRedisLockProvider } from '@fencelock/redis';
import type { LockProvider } from '@fencelock/core';
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';
import type { BenchAddresses } from './bench-servers.js';
import { LOCK_TTL_MS, type LockSession, type Subject } from './subjects.js';

/** Permits of every measured semaphore. */
export const SEMAPHORE_LIMIT = 3;

/** The subjects of one primitive on one backend, measured together (interleaved, same server). */
export interface CoordinationGroup {
  /** `semaphore` (one permit of {@link SEMAPHORE_LIMIT}) or `election` (campaign, then resign). */
  readonly primitive: 'semaphore' | 'election';
  /** The backend's name, for the tables. */
  readonly backend: string;
  /** fencelock first, then the peers. */
  readonly subjects: readonly Subject[];
  /** How many holders may overlap: the semaphore's limit, 1 for an election. */
  readonly limit: number;
}

/** One permit of `provider`'s semaphore `key` per `lock`, with a TTL and no renewal, like the peers. */
export function fencelockSemaphoreSession(provider: LockProvider): LockSession {
  return {
    async lock(key, waitMs) {
      const handle = await provider.acquireSemaphore(key, { limit: SEMAPHORE_LIMIT, ttlMs: LOCK_TTL_MS, autoExtend: false, waitMs });
      return async () => {
        await handle.release();
      };
    },
    close: () => provider.close(),
  };
}

/** Every coordination group on the servers at `addresses`. */
export function coordinationGroups(addresses: BenchAddresses): readonly CoordinationGroup[] {
  const { redisUrl } = addresses;
  return [
    {
      primitive: 'semaphore',
      backend: 'redis',
      limit: SEMAPHORE_LIMIT,
      subjects: [
        {
          id: 'semaphore/redis/fencelock', backend: 'redis', kind: 'fencelock', label: '@fencelock/redis acquireSemaphore', waits: true,
          open: async () => fencelockSemaphoreSession(createRedisLockProvider({ connection: redisUrl, keyPrefix: 'fencelock-bench:' })),
        },
        {
          id: 'semaphore/redis/redis-semaphore', backend: 'redis', kind: 'peer', label: 'redis-semaphore Semaphore', waits: true, package: 'redis-semaphore',
          open: async () => {
            const client = new Redis(redisUrl);
            return {
              async lock(key, waitMs) {
                const semaphore = new Semaphore(client, `redis-semaphore:${key}`, SEMAPHORE_LIMIT, { lockTimeout: LOCK_TTL_MS, acquireTimeout: Math.max(1, waitMs), refreshInterval: 0 });
                await semaphore.acquire();
                return () => semaphore.release();
              },
              close: async () => client.disconnect(),
            };
          },
        },
      ],
    },
  ];
}
