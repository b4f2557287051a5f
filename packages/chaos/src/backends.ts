/**
 * What the parent process of the chaos harness knows of every backend: the adapters' declared
 * capabilities, and the L3 scan of a run's leftovers. A client process does not load this module: it
 * builds its provider in `chaos-provider.ts`, with its own backend's adapter alone.
 */
import type { LockCapabilities } from '@fencelock/core';
import { ETCD_CAPABILITIES } from '@fencelock/etcd';
import { POSTGRES_CAPABILITIES } from '@fencelock/postgres';
import { REDIS_CAPABILITIES } from '@fencelock/redis';
import { REDLOCK_CAPABILITIES } from '@fencelock/redlock';
import { ZOOKEEPER_CAPABILITIES } from '@fencelock/zookeeper';
import type { BackendName } from './backend-traits.js';
import { type ClientBackendConfig, createChaosProvider } from './chaos-provider.js';

export { BACKEND_NAMES, BACKEND_TRAITS, type BackendName, type BackendTraits, isBackendName } from './backend-traits.js';
export type { ClientBackendConfig } from './chaos-provider.js';

/** What each adapter declares it does; the harness decides from it (semaphore rows), never from a list of names. */
export const BACKEND_CAPABILITIES: Readonly<Record<BackendName, LockCapabilities>> = {
  redis: REDIS_CAPABILITIES,
  redlock: REDLOCK_CAPABILITIES,
  etcd: ETCD_CAPABILITIES,
  zookeeper: ZOOKEEPER_CAPABILITIES,
  postgres: POSTGRES_CAPABILITIES,
};

/** True when `backend`'s adapter declares counting semaphores. */
export function hasSemaphores(backend: BackendName): boolean {
  return BACKEND_CAPABILITIES[backend].semaphore !== 'none';
}

/** True when `backend`'s adapter declares leader election. */
export function hasElections(backend: BackendName): boolean {
  return BACKEND_CAPABILITIES[backend].election !== 'none';
}

/** What {@link scanLeftovers} looks at: lock keys, semaphore keys and election names of the run. */
export interface LeftoverScan {
  readonly locks?: readonly string[];
  readonly semaphores?: readonly string[];
  readonly elections?: readonly string[];
}

/**
 * The run's keys that someone still holds (L3), asked through a fresh provider of the same adapter
 * (`inspect`, `inspectSemaphore`, and `leader` for election names), so the check knows nothing of
 * any backend's key layout. Bounded to 10 s.
 */
export async function scanLeftovers(config: ClientBackendConfig, scan: LeftoverScan): Promise<string[]> {
  const { locks: keys = [], semaphores: semaphoreKeys = [], elections = [] } = scan;
  const provider = await createChaosProvider(config);
  let timer: NodeJS.Timeout | undefined;
  try {
    const scan = (async () => {
      const held: string[] = [];
      for (const key of keys) {
        const info = await provider.inspect(key);
        if (info !== undefined && info.holders.length > 0) held.push(`${config.keyPrefix}${key} (${info.holders.map((holder) => holder.ownerId).join(', ')})`);
      }
      for (const key of semaphoreKeys) {
        const info = await provider.inspectSemaphore(key);
        if (info !== undefined && info.holders.length > 0) held.push(`semaphore ${config.keyPrefix}${key} (${info.holders.map((holder) => holder.ownerId).join(', ')})`);
      }
      for (const name of elections) {
        const leader = await provider.leader(name);
        if (leader !== undefined) held.push(`election ${config.keyPrefix}${name} (led by ${JSON.stringify(leader.value)})`);
      }
      return held;
    })();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('leftover scan took more than 10 s')), 10_000);
    });
    return await Promise.race([scan, timeout]);
  } finally {
    clearTimeout(timer);
    await provider.close().catch(() => undefined);
  }
}
