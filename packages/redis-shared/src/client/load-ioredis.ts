import { LockTypeError } from '@fencelock/core/adapter';
import { createRequire } from 'node:module';
import type { IoredisInternals } from './ioredis-lock-client.js';
import type { IoredisCommandClass } from './ioredis-wire-command.js';

/** What the adapters take from the ioredis package to open the connections they own. */
export interface IoredisModule {
  readonly Redis: new (...args: unknown[]) => IoredisInternals;
  readonly Cluster: new (...args: unknown[]) => IoredisInternals;
  readonly Command: IoredisCommandClass;
}

let loaded: IoredisModule | undefined;

/**
 * The ioredis package, the default client of connections described by options (`redis://` URLs,
 * ioredis options, cluster nodes). Loaded on first use, not imported: ioredis is an optional peer
 * dependency, and a user who hands in a node-redis client need not install it. When it is missing,
 * throws `LOCK_INVALID_ARGUMENT` (`LockTypeError`) about `argument`, the option that needed it.
 */
export function loadIoredis(argument: string): IoredisModule {
  if (loaded !== undefined) return loaded;
  const require = createRequire(import.meta.url);
  try {
    loaded = require('ioredis') as IoredisModule;
  } catch (error) {
    const refusal = new LockTypeError(argument, `${argument} is opened with ioredis, which is not installed: install ioredis, or pass your own client`);
    refusal.cause = error;
    throw refusal;
  }
  return loaded;
}
