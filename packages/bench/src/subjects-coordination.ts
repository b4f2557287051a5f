/**
 * The coordination subjects: counting semaphores and leader elections beside the library users
 * would otherwise pick on the same server (redis-semaphore's `Semaphore`, etcd3's `Election`). A semaphore subject's `lock`
 * takes one permit of a semaphore of {@link SEMAPHORE_LIMIT} permits, so the uncontended and
 * contended loops of the lock scenarios measure it unchanged.
 */
import type { LockProvider } from '@fencelock/core';
import { createEtcdLockProvider } from '@fencelock/etcd';
import { createRedisLockProvider } from '@fencelock/redis';
import { Etcd3 } from 'etcd3';
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

/** Leadership of `provider`'s election `key` per `lock`, given up by resigning. */
export function fencelockElectionSession(provider: LockProvider): LockSession {
  return {
    async lock(key, waitMs) {
      const leader = await provider.campaign(key, { value: 'bench', waitMs });
      return async () => {
        await leader.resign();
      };
    },
    close: () => provider.close(),
  };
}

/** etcd3's `Election` (a lease per campaign, as the library makes it), bounded by `waitMs`. */
function etcd3ElectionSession(hosts: readonly string[]): LockSession {
  const client = new Etcd3({ hosts: [...hosts] });
  return {
    async lock(key, waitMs) {
      const campaign = client.election(`etcd3-election/${key}`, 10).campaign('bench');
      // A failed campaign emits `error`; its wait() rejects with it, which is what the caller sees.
      campaign.on('error', () => undefined);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          campaign.wait(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`etcd3 campaign ${key} not elected within ${waitMs} ms`)), waitMs);
          }),
        ]);
      } catch (error) {
        await campaign.resign().catch(() => undefined);
        throw error;
      } finally {
        clearTimeout(timer);
      }
      return () => campaign.resign();
    },
    close: async () => client.close(),
  };
}

/** Every coordination group on the servers at `addresses`. */
export function coordinationGroups(addresses: BenchAddresses): readonly CoordinationGroup[] {
  const { redisUrl, etcdEndpoints } = addresses;
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
    {
      primitive: 'election',
      backend: 'etcd',
      limit: 1,
      subjects: [
        {
          id: 'election/etcd/fencelock', backend: 'etcd', kind: 'fencelock', label: '@fencelock/etcd campaign + resign', waits: true,
          open: async () => fencelockElectionSession(createEtcdLockProvider({ connection: { hosts: [...etcdEndpoints] }, keyPrefix: 'fencelock-bench/', sessionTtlMs: LOCK_TTL_MS })),
        },
        {
          id: 'election/etcd/etcd3', backend: 'etcd', kind: 'peer', label: 'etcd3 Election campaign + resign', waits: true, package: 'etcd3',
          open: async () => etcd3ElectionSession(etcdEndpoints),
        },
      ],
    },
  ];
}
