// A consumer under `moduleResolution: bundler` (Vite, esbuild, webpack projects).
import pg from 'pg';
import { createPostgresLockProvider, guardedWrite } from '@fencelock/postgres';

const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:15432/postgres' });
const locks = createPostgresLockProvider({ pool });

export async function sellOne(sku: string): Promise<void> {
  await using lock = await locks.acquire(`stock:${sku}`, { waitMs: 5_000 });
  // @ts-expect-error the token is a bigint: if the types resolved to `any`, this line would compile.
  await guardedWrite(pool, { resource: `stock:${sku}`, token: 42, signal: lock.signal }, async () => undefined);
  await guardedWrite(pool, { resource: `stock:${sku}`, token: lock.fencingToken!, signal: lock.signal }, async (tx) => {
    await tx.query('UPDATE stock SET units = units - 1 WHERE sku = $1', [sku]);
  });
}
