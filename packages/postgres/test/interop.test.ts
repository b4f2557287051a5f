import { afterEach, describe, expect, it } from 'vitest';
import { type PostgresLockProvider, advisoryLockId, createPostgresLockProvider } from '../src/index.js';
import { postgresUrl } from './pg.js';
import { PsqlSession } from './psql.js';

// Another program locking by the documented id: psql's own session holds `pg_advisory_lock(id)`.
describe('interop with psql sessions locking the documented id', () => {
  let psql: PsqlSession | undefined;
  let provider: PostgresLockProvider | undefined;
  afterEach(async () => {
    await provider?.close();
    await psql?.quit();
    provider = undefined;
    psql = undefined;
  });

  it('computes the documented id in SQL exactly as advisoryLockId does', async () => {
    psql = PsqlSession.start();
    for (const key of ['jobs:nightly', 'é', 'a/b', '__proto__']) {
      const literal = key.replaceAll("'", "''");
      const id = await psql.run(`SELECT ('x' || left(encode(sha256(convert_to('fencelock:' || '${literal}', 'UTF8')), 'hex'), 16))::bit(64)::bigint;`);
      expect(id).toBe(advisoryLockId(key).toString());
    }
  });

  it("psql's pg_advisory_lock(<id>) excludes our lock, and its unlock lets us in", async () => {
    const key = `interop:${crypto.randomUUID()}`;
    const id = advisoryLockId(key);
    psql = PsqlSession.start();
    expect(await psql.run(`SELECT pg_advisory_lock(${id});`)).toBe('');
    provider = createPostgresLockProvider({ connection: postgresUrl });
    expect(await provider.tryAcquire(key)).toBeUndefined();
    // Seen as a foreign holder, named by its server process.
    const info = await provider.inspect(key);
    expect(info?.holders).toHaveLength(1);
    expect(info?.holders[0]?.ownerId).toMatch(/^postgres-pid:\d+$/);
    expect(info?.holders[0]?.fencingToken).toBeUndefined();
    expect(await psql.run(`SELECT pg_advisory_unlock(${id});`)).toBe('t');
    // A foreign unlock sends no notification: the waiter's polling finds the lock free.
    const lock = await provider.acquire(key, { waitMs: 10_000 });
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  });

  it("our lock excludes psql's pg_try_advisory_lock(<id>) until we release it", async () => {
    const key = `interop:${crypto.randomUUID()}`;
    const id = advisoryLockId(key);
    provider = createPostgresLockProvider({ connection: postgresUrl });
    const lock = await provider.acquire(key);
    psql = PsqlSession.start();
    expect(await psql.run(`SELECT pg_try_advisory_lock(${id});`)).toBe('f');
    expect(await lock.release()).toBe(true);
    expect(await psql.run(`SELECT pg_try_advisory_lock(${id});`)).toBe('t');
    // And now psql holds it: we are excluded again.
    expect(await provider.tryAcquire(key)).toBeUndefined();
  });

  it('a user-chosen numeric id (options.lockId) is the id other programs lock', async () => {
    const id = BigInt(Math.floor(Math.random() * 1e12)) + 1_000_000n;
    provider = createPostgresLockProvider({ connection: postgresUrl, lockId: () => id });
    const lock = await provider.acquire('invoice-run');
    psql = PsqlSession.start();
    expect(await psql.run(`SELECT pg_try_advisory_lock(${id});`)).toBe('f');
    await lock.release();
  });
});
