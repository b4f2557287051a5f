// An ES module consumer under `moduleResolution: node16`: resolves the packages' `import` types.
import { LockError, type LockHandle, type LockProvider } from '@fencelock/core';
import { createPostgresLockProvider, type PostgresLockProviderOptions } from '@fencelock/postgres';

const options: PostgresLockProviderOptions = { connection: 'postgres://postgres@127.0.0.1:15432/postgres', sessionTtlMs: 10_000 };
const locks: LockProvider = createPostgresLockProvider(options);

export async function holdOnce(key: string): Promise<bigint | undefined> {
  const lock: LockHandle = await locks.acquire(key, { waitMs: 5_000 });
  // @ts-expect-error waitMs is a number of milliseconds: if the types resolved to `any`, this line would compile.
  await locks.tryAcquire(key, { waitMs: '5s' });
  try {
    return lock.fencingToken;
  } finally {
    await lock.release();
  }
}

export const isFencelockError = (error: unknown): boolean => error instanceof LockError && error.code === 'LOCK_TIMEOUT';
