import { afterEach, describe, expect, it } from 'vitest';
import { type PostgresLockProvider, advisoryLockId, createPostgresLockProvider, electionLockId, semaphoreLockIds } from '../src/index.js';
import { lockIdParts } from '../src/lock-id.js';
import { postgresUrl } from './pg.js';
import { PsqlSession } from './psql.js';

// Each test's psql session and provider, ended after it.
let psql: PsqlSession | undefined;
let provider: PostgresLockProvider | undefined;
afterEach(async () => {
  await provider?.close();
  await psql?.quit();
  provider = undefined;
  psql = undefined;
});

// Another program locking by the documented id: psql's own session holds `pg_advisory_lock(id)`.
describe('interop with psql sessions locking the documented id', () => {
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

// What an operator sees of semaphores, and other programs locking their documented slots.
describe('semaphores seen from psql', () => {
  it('computes the documented slot keys in SQL exactly as semaphoreLockIds does', async () => {
    psql = PsqlSession.start();
    for (const key of ['jobs:nightly', 'é', '__proto__', `sem:${crypto.randomUUID()}`]) {
      const literal = key.replaceAll("'", "''");
      const keys = await psql.run(
        `WITH k AS (SELECT ('x' || left(encode(sha256(convert_to('fencelock:' || '${literal}', 'UTF8')), 'hex'), 16))::bit(64)::bigint & 18014398509481983 AS id)
         SELECT (id >> 22)::bit(32)::int, ((id & 4194303) << 10)::bit(32)::int FROM k;`,
      );
      const ids = semaphoreLockIds(advisoryLockId(key));
      expect(keys).toBe(`${ids.key1}|${ids.key2}`);
    }
  });

  it('shows each permit as one pg_locks row (objsubid 2, slot in objid), apart from the lock of the same key (objsubid 1)', async () => {
    const key = `sem-view:${crypto.randomUUID()}`;
    const ids = semaphoreLockIds(advisoryLockId(key));
    provider = createPostgresLockProvider({ connection: postgresUrl });
    const permits = await provider.acquireSemaphore(key, { limit: 3, permits: 2 });
    const lock = await provider.acquire(key);
    const pid = provider.backendPid;
    psql = PsqlSession.start();
    // The operator's query: every advisory lock of our session, the semaphore's slots decoded.
    const rows = await psql.run(
      `SELECT objsubid, CASE WHEN objsubid = 2 THEN (classid::bigint << 22) + (objid::bigint >> 10) END, CASE WHEN objsubid = 2 THEN objid::bigint & 1023 END
       FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = ${pid} ORDER BY 1, 3;`,
    );
    const { classid, objid } = lockIdParts(advisoryLockId(key));
    expect(classid).not.toBe(ids.classid);
    expect(rows.split('\n')).toEqual(['1||', `2|${ids.semaphoreId}|0`, `2|${ids.semaphoreId}|1`]);
    expect(await psql.run(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND classid = ${classid} AND objid = ${objid} AND pid = ${pid};`)).toBe('1');
    await Promise.all([permits.release(), lock.release()]);
    expect(await psql.run(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ${pid};`)).toBe('0');
  });

  it("psql holding a slot's two-int lock takes that permit; the same 64 bits as a bigint lock take nothing", async () => {
    const key = `sem-interop:${crypto.randomUUID()}`;
    const ids = semaphoreLockIds(advisoryLockId(key));
    psql = PsqlSession.start();
    expect(await psql.run(`SELECT pg_advisory_lock(${ids.key1}, ${ids.key2});`)).toBe('');
    provider = createPostgresLockProvider({ connection: postgresUrl });
    expect(await provider.tryAcquireSemaphore(key, { limit: 1 })).toBeUndefined();
    const info = await provider.inspectSemaphore(key);
    expect(info?.holders).toEqual([expect.objectContaining({ ownerId: expect.stringMatching(/^postgres-pid:\d+$/), permits: 1, fencingToken: undefined })]);
    // A second slot is free for a limit of 2 (the one psql holds has no recorded limit to disagree with).
    const second = await provider.tryAcquireSemaphore(key, { limit: 2 });
    expect(second).toBeDefined();
    await second?.release();
    expect(await psql.run(`SELECT pg_advisory_unlock(${ids.key1}, ${ids.key2});`)).toBe('t');
    // A foreign unlock sends no notification: the waiter's polling finds the permit free.
    const permit = await provider.acquireSemaphore(key, { limit: 1, waitMs: 10_000 });
    // The bigint with the same 64 bits as slot 0's two keys is another lock (objsubid 1): free.
    const sameBits = (BigInt(ids.classid) << 32n) | BigInt(ids.objidBase);
    expect(await psql.run(`SELECT pg_try_advisory_lock(${BigInt.asIntN(64, sameBits)});`)).toBe('t');
    expect(await psql.run(`SELECT pg_try_advisory_lock(${ids.key1}, ${ids.key2});`)).toBe('f');
    await permit.release();
    expect(await psql.run(`SELECT pg_try_advisory_lock(${ids.key1}, ${ids.key2});`)).toBe('t');
  });
});

describe('elections seen from psql', () => {
  it('computes the documented election id in SQL exactly as electionLockId does', async () => {
    psql = PsqlSession.start();
    for (const name of ['scheduler', 'é', '__proto__']) {
      const literal = name.replaceAll("'", "''");
      const id = await psql.run(
        `WITH l AS (SELECT ('x' || left(encode(sha256(convert_to('fencelock:' || '${literal}', 'UTF8')), 'hex'), 16))::bit(64)::bigint AS lock_id)
         SELECT ('x' || left(encode(sha256(convert_to('fencelock-election:' || lock_id::text, 'UTF8')), 'hex'), 16))::bit(64)::bigint FROM l;`,
      );
      expect(id).toBe(electionLockId(advisoryLockId(name)).toString());
    }
  });

  it("shows the leader as one pg_locks row (objsubid 1, the election's id) and its holder row (value, term)", async () => {
    const name = `elect-view:${crypto.randomUUID()}`;
    const id = electionLockId(advisoryLockId(name));
    provider = createPostgresLockProvider({ connection: postgresUrl });
    const leader = await provider.campaign(name, { value: 'host-a:8080' });
    const pid = provider.backendPid;
    psql = PsqlSession.start();
    // The operator's query: who holds the election's advisory lock, and what the holder row says.
    const rows = await psql.run(
      `SELECT l.pid, l.mode, h.owner_id, h.token, convert_from(h.metadata, 'UTF8')
       FROM pg_locks l JOIN fencelock_tokens_holders h ON h.lock_id = ${id}
       WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
         AND ((l.classid::bigint << 32) | l.objid::bigint) = ${id};`,
    );
    expect(rows).toBe(`${pid}|ExclusiveLock|${leader.ownerId}|${leader.term}|host-a:8080`);
    // The lock of the same name is another advisory lock: nobody holds it.
    const { classid, objid } = lockIdParts(advisoryLockId(name));
    expect(await psql.run(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND classid = ${classid} AND objid = ${objid};`)).toBe('0');
    expect(await leader.resign()).toBe(true);
    expect(await psql.run(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ${pid};`)).toBe('0');
    expect(await psql.run(`SELECT count(*) FROM fencelock_tokens_holders WHERE lock_id = ${id};`)).toBe('0');
  });

  it("psql holding the election's id keeps every campaigner out until it unlocks", async () => {
    const name = `elect-interop:${crypto.randomUUID()}`;
    const id = electionLockId(advisoryLockId(name));
    psql = PsqlSession.start();
    expect(await psql.run(`SELECT pg_advisory_lock(${id});`)).toBe('');
    provider = createPostgresLockProvider({ connection: postgresUrl });
    expect(await provider.tryCampaign(name, { value: 'v' })).toBeUndefined();
    expect(await psql.run(`SELECT pg_advisory_unlock(${id});`)).toBe('t');
    const leader = await provider.tryCampaign(name, { value: 'v' });
    expect(leader).toBeDefined();
    await leader?.resign();
  });
});
