// A CommonJS consumer under `moduleResolution: node16`: resolves the packages' `require` types.
import { isLockError, type LockHandle } from '@fencelock/core';
import { advisoryLockId, createPostgresLockProvider, type PostgresLockProviderOptions } from '@fencelock/postgres';

const options: PostgresLockProviderOptions = { connection: { host: '127.0.0.1', port: 15432, user: 'postgres' } };
const locks = createPostgresLockProvider(options);

export async function holdOnce(key: string): Promise<bigint | undefined> {
  const lock: LockHandle = await locks.acquire(key, { waitMs: 5_000 });
  // @ts-expect-error the advisory lock id is a bigint: if the types resolved to `any`, this line would compile.
  const id: number = advisoryLockId(key);
  try {
    return id === 0 ? undefined : lock.fencingToken;
  } finally {
    await lock.release();
  }
}

export const isTimeout = (error: unknown): boolean => isLockError(error, 'LOCK_TIMEOUT');
