import { MAX_SEMAPHORE_LIMIT, isLockError } from '@fencelock/core';
import { sleep } from '@fencelock/test-infra';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type PostgresLockProvider, SEMAPHORE_SLOTS, advisoryLockId, createPostgresLockProvider, semaphoreLockIds } from '../src/index.js';
import { checkedSemaphoreLimit } from '../src/semaphore-id.js';
import { holderPids, postgresUrl, proxyToPostgres, rawClient, semaphoreSlots, terminateHolders, urlThrough } from './pg.js';

const operator = rawClient();
afterAll(async () => (await operator).end());

const made: PostgresLockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(made.splice(0).map((provider) => provider.close()));
});
function provider(options: Partial<Parameters<typeof createPostgresLockProvider>[0]> = {}): PostgresLockProvider {
  const created = createPostgresLockProvider({ connection: postgresUrl, sessionTtlMs: 3_000, ...options });
  made.push(created);
  return created;
}

/** Resolves the signal's reason once it aborts; rejects after `ms`. */
function aborted(signal: AbortSignal, ms: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not aborted within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(signal.reason);
    }, { once: true });
  });
}

describe('the holder connection killed (pg_terminate_backend)', () => {
  it("aborts the holder's signal with LOCK_LOST, and the waiting contender gets the lock with a larger token", async () => {
    const [a, b] = [provider(), provider()];
    const key = `faults:${crypto.randomUUID()}`;
    const lock = await a.acquire(key);
    const pid = a.backendPid;
    expect(await holderPids(await operator, key)).toEqual([pid]);
    const contended = new Promise<void>((resolve) => {
      const off = b.on('contended', (event) => {
        if (event.key !== key) return;
        off();
        resolve();
      });
    });
    const waiter = b.acquire(key, { waitMs: 20_000 });
    await contended;
    expect(await terminateHolders(await operator, key)).toBe(1);
    const reason = await aborted(lock.signal, 5_000);
    expect(isLockError(reason, 'LOCK_LOST')).toBe(true);
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost', key });
    expect(lock.isHeld()).toBe(false);
    // The server freed it with the session (no NOTIFY from a dead session): the waiter's poll finds it.
    const next = await waiter;
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    expect(await lock.release()).toBe(false);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });
    expect((await a.inspect(key))?.holders.map((h) => h.ownerId)).toEqual([next.ownerId]);
    // The killed provider opens a new session for its next lock, fenced above both.
    await next.release();
    const again = await a.acquire(key, { waitMs: 10_000 });
    expect(again.fencingToken! > next.fencingToken!).toBe(true);
    expect(a.backendPid).not.toBe(pid);
    await again.release();
  });
});

describe('a waiting acquire whose request times out', () => {
  const REQUEST_TIMEOUT_MS = 300;
  type Free = { readonly beforeHealing?: () => Promise<unknown>; readonly afterHealing?: () => Promise<unknown> };
  type Silenced = <T>(call: () => Promise<T>, free: Free) => Promise<T>;

  /**
   * Provider A, and B behind a proxy with a short request bound. `silenced` starts B's waiting call
   * with B's link silent and heals it later: the fault, not a wait for the outcome — long enough for
   * B's first try to time out (timers of this process fire in order). `free` frees the key before or
   * after the link heals.
   */
  async function withSilencedWaiter(work: (a: PostgresLockProvider, b: PostgresLockProvider, silenced: Silenced) => Promise<void>): Promise<void> {
    const proxy = await proxyToPostgres();
    try {
      const [a, b] = [provider(), provider({ connection: urlThrough(proxy), requestTimeoutMs: REQUEST_TIMEOUT_MS })];
      // B's session is open before its link goes silent: its try is sent and never answered.
      await (await b.acquire(`warm:${crypto.randomUUID()}`)).release();
      await work(a, b, async (call, free) => {
        proxy.setMode('blackhole');
        const waiter = call();
        waiter.catch(() => undefined);
        await sleep(REQUEST_TIMEOUT_MS * 3);
        await free.beforeHealing?.();
        proxy.setMode('pass');
        await free.afterHealing?.();
        return waiter;
      });
    } finally {
      await proxy.close();
    }
  }

  it('tries again until its deadline instead of failing, and gets the lock once it is freed', () =>
    withSilencedWaiter(async (a, b, silenced) => {
      const key = `faults:${crypto.randomUUID()}`;
      const lock = await a.acquire(key);
      const next = await silenced(() => b.acquire(key, { waitMs: 20_000 }), { afterHealing: () => lock.release() });
      expect(next.fencingToken! > lock.fencingToken!).toBe(true);
      expect((await a.inspect(key))?.holders.map((h) => h.ownerId)).toEqual([next.ownerId]);
      await next.release();
    }));

  it('a semaphore too; its timed-out try, granted late, is undone and the permits are held once', () =>
    withSilencedWaiter(async (a, b, silenced) => {
      const key = `faults-sem:${crypto.randomUUID()}`;
      const held = await a.acquireSemaphore(key, { limit: 2, permits: 2 });
      // Freed before the link heals: the held-back try is granted when it arrives, after its timeout.
      const next = await silenced(() => b.acquireSemaphore(key, { limit: 2, permits: 2, waitMs: 20_000 }), { beforeHealing: () => held.release() });
      expect(next.fencingToken! > held.fencingToken!).toBe(true);
      expect((await a.inspectSemaphore(key))?.holders.map((h) => [h.ownerId, h.permits])).toEqual([[next.ownerId, 2]]);
      await expect(a.acquireSemaphore(key, { limit: 2, waitMs: 0 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
      expect(await next.release()).toBe(true);
      expect(await a.inspectSemaphore(key)).toBeUndefined();
    }));
});

describe("a semaphore holder's connection killed (pg_terminate_backend)", () => {
  it('frees every permit of its session, aborts its handles with LOCK_LOST, and a waiter gets them with a larger token', async () => {
    const [a, b] = [provider(), provider()];
    const key = `faults-sem:${crypto.randomUUID()}`;
    // Both permits on a's one session: two permits of one holder, and the limit is reached.
    const [two, other] = [await a.acquireSemaphore(key, { limit: 3, permits: 2 }), await a.acquireSemaphore(key, { limit: 3 })];
    const pid = a.backendPid;
    expect(await semaphoreSlots(await operator, key)).toEqual([0, 1, 2].map((slot) => ({ pid, slot })));
    const contended = new Promise<void>((resolve) => {
      const off = b.on('contended', (event) => {
        if (event.key !== key) return;
        off();
        resolve();
      });
    });
    const waiter = b.acquireSemaphore(key, { limit: 3, permits: 3, waitMs: 20_000 });
    await contended;
    await (await operator).query('SELECT pg_terminate_backend($1, 5000)', [pid]);
    for (const handle of [two, other]) {
      expect(await aborted(handle.signal, 5_000)).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost', key });
      expect(handle.isHeld()).toBe(false);
    }
    // The server freed the slots with the session (no NOTIFY from a dead session): the waiter's poll finds all three.
    const next = await waiter;
    expect(next.permits).toBe(3);
    expect(next.fencingToken! > other.fencingToken!).toBe(true);
    expect(await semaphoreSlots(await operator, key)).toEqual([0, 1, 2].map((slot) => ({ pid: b.backendPid, slot })));
    expect(await two.release()).toBe(false);
    await expect(other.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });
    expect((await a.inspectSemaphore(key))?.holders.map((h) => [h.ownerId, h.permits])).toEqual([[next.ownerId, 3]]);
    // The killed provider opens a new session for its next permit, fenced above the waiter's.
    expect(await next.release()).toBe(true);
    const again = await a.acquireSemaphore(key, { limit: 3, waitMs: 10_000 });
    expect(again.fencingToken! > next.fencingToken!).toBe(true);
    expect(a.backendPid).not.toBe(pid);
    await again.release();
    expect(await semaphoreSlots(await operator, key)).toEqual([]);
  });
});

describe('a semaphore attempt that fails after taking slots', () => {
  it('gives its slots back and bumps no token (a session lock outlives the rollback)', async () => {
    // The operator makes every holder row refused: the attempt has taken its slots when the insert fails.
    const table = `fl_semfail_${crypto.randomUUID().replaceAll('-', '')}`;
    const client = await operator;
    await client.query(`CREATE TABLE ${table}_semhold (semaphore_id bigint NOT NULL, owner_id text NOT NULL, holder_session text NOT NULL,
      slots integer[] NOT NULL, token bigint NOT NULL, metadata bytea, PRIMARY KEY (semaphore_id, owner_id), CHECK (false))`);
    try {
      const a = provider({ table });
      const key = `semfail:${crypto.randomUUID()}`;
      const error: unknown = await a.tryAcquireSemaphore(key, { limit: 3, permits: 2 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE', key });
      expect(String((error as { cause?: unknown }).cause)).toMatch(/check constraint/);
      expect(await semaphoreSlots(client, key)).toEqual([]);
      // The statement rolled back whole: not even the semaphore's row stayed.
      expect((await client.query(`SELECT token FROM ${table}_sem`)).rows).toEqual([]);
      // The session is still good, and nothing of the failed attempt holds the key's slots.
      await client.query(`ALTER TABLE ${table}_semhold DROP CONSTRAINT ${table}_semhold_check`);
      const permits = await a.tryAcquireSemaphore(key, { limit: 3, permits: 3 });
      expect(permits?.fencingToken).toBe(1n);
      await permits?.release();
    } finally {
      await client.query(`DROP TABLE IF EXISTS ${table}_sem, ${table}_semhold, ${table}, ${table}_holders`);
    }
  });
});

describe('semaphore limits at the edge of the slots', () => {
  it('takes all 1024 permits of a key in one call, as 1024 slots of its own range and no other', async () => {
    const a = provider();
    const key = `sem-edge:${crypto.randomUUID()}`;
    const all = await a.acquireSemaphore(key, { limit: MAX_SEMAPHORE_LIMIT, permits: MAX_SEMAPHORE_LIMIT });
    const slots = await semaphoreSlots(await operator, key);
    expect(slots.map((row) => row.slot)).toEqual(Array.from({ length: SEMAPHORE_SLOTS }, (_, slot) => slot));
    // Every slot in the key's range, none beyond it: the session holds exactly these two-int4 locks.
    const { rows } = await (await operator).query<{ count: number }>(
      "SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND pid = $1",
      [a.backendPid],
    );
    expect(rows[0]?.count).toBe(SEMAPHORE_SLOTS);
    expect(await a.tryAcquireSemaphore(key, { limit: MAX_SEMAPHORE_LIMIT })).toBeUndefined();
    expect(await all.release()).toBe(true);
    expect(await semaphoreSlots(await operator, key)).toEqual([]);
  });

  it('refuses a limit beyond the slots with a typed error (before any query)', () => {
    expect(checkedSemaphoreLimit(SEMAPHORE_SLOTS)).toBe(SEMAPHORE_SLOTS);
    expect(() => checkedSemaphoreLimit(SEMAPHORE_SLOTS + 1)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', name: 'LockRangeError' }));
  });
});

describe('one session, many owners', () => {
  it('never grants a lock twice on the one session (advisory locks are re-entrant per session)', async () => {
    const a = provider();
    const key = `reentry:${crypto.randomUUID()}`;
    const first = await a.acquire(key);
    expect(await a.tryAcquire(key)).toBeUndefined();
    expect(await first.release()).toBe(true);
    const second = await a.tryAcquire(key);
    expect(second?.fencingToken).toBe(first.fencingToken! + 1n);
    await second?.release();
    expect(await holderPids(await operator, key)).toEqual([]);
  });

  it('keys whose ids collide contend with each other (false contention), never share a hold', async () => {
    const a = provider({ lockId: () => 42_4242n });
    const b = provider({ lockId: () => 42_4242n });
    const one = await a.acquire('one');
    expect(await a.tryAcquire('two')).toBeUndefined();
    expect(await b.tryAcquire('two')).toBeUndefined();
    await one.release();
    const two = await b.acquire('two');
    expect(two.fencingToken! > one.fencingToken!).toBe(true);
    await two.release();
  });
});

describe('shared and exclusive holds on one session', () => {
  it('keeps one provider\'s shared and exclusive owners apart (the server would grant its session both)', async () => {
    const [a, b] = [provider(), provider()];
    const key = `rw-session:${crypto.randomUUID()}`;
    const reader = await a.acquire(key, { mode: 'shared' });
    // Same session: the server would grant this, so the provider must answer "held" itself.
    expect(await a.tryAcquire(key)).toBeUndefined();
    const reader2 = await a.tryAcquire(key, { mode: 'shared' });
    expect(reader2?.fencingToken).toBe(reader.fencingToken! + 1n);
    expect(await b.tryAcquire(key)).toBeUndefined();
    const info = await b.inspect(key);
    expect(info?.holders.map((h) => [h.ownerId, h.mode, h.fencingToken]).sort()).toEqual(
      [
        [reader.ownerId, 'shared', reader.fencingToken],
        [reader2?.ownerId, 'shared', reader2?.fencingToken],
      ].sort(),
    );
    // One of two counted holds released: the session still holds the shared lock.
    expect(await reader.release()).toBe(true);
    expect(await holderPids(await operator, key)).toEqual([a.backendPid]);
    expect(await a.tryAcquire(key)).toBeUndefined();
    expect(await reader2?.release()).toBe(true);
    expect(await holderPids(await operator, key)).toEqual([]);
    // Exclusive on the session: no local shared owner gets in, another session neither.
    const writer = await a.acquire(key);
    expect(writer.fencingToken! > reader2!.fencingToken!).toBe(true);
    expect(await a.tryAcquire(key, { mode: 'shared' })).toBeUndefined();
    expect(await b.tryAcquire(key, { mode: 'shared' })).toBeUndefined();
    expect((await b.inspect(key))?.holders).toEqual([expect.objectContaining({ ownerId: writer.ownerId, mode: 'exclusive', fencingToken: writer.fencingToken })]);
    await writer.release();
    expect(await holderPids(await operator, key)).toEqual([]);
  });

  it('a local writer waiting behind local readers is woken by their release', async () => {
    const a = provider();
    const key = `rw-wake:${crypto.randomUUID()}`;
    const reader = await a.acquire(key, { mode: 'shared' });
    const contended = new Promise<void>((resolve) => {
      const off = a.on('contended', (event) => {
        if (event.key !== key) return;
        off();
        resolve();
      });
    });
    const writer = a.acquire(key, { waitMs: 10_000 });
    await contended;
    await reader.release();
    const held = await writer;
    expect(held.mode).toBe('exclusive');
    expect(held.fencingToken! > reader.fencingToken!).toBe(true);
    await held.release();
  });

  it('a shared hold is lost with its session like an exclusive one', async () => {
    const [a, b] = [provider(), provider()];
    const key = `rw-lost:${crypto.randomUUID()}`;
    const reader = await a.acquire(key, { mode: 'shared' });
    expect(await terminateHolders(await operator, key)).toBe(1);
    const reason = await aborted(reader.signal, 5_000);
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost' });
    const writer = await b.acquire(key, { waitMs: 10_000 });
    expect(writer.fencingToken! > reader.fencingToken!).toBe(true);
    await writer.release();
  });
});

describe('release notifications', () => {
  it('a release NOTIFYs the channel with the lock id', async () => {
    const listener = await rawClient();
    try {
      await listener.query('LISTEN fencelock_release');
      const key = `notify:${crypto.randomUUID()}`;
      const id = advisoryLockId(key).toString();
      const heard = new Promise<string | undefined>((resolve) => {
        listener.on('notification', (message) => {
          if (message.payload === id) resolve(message.payload);
        });
      });
      const lock = await provider().acquire(key);
      await lock.release();
      expect(await heard).toBe(id);
    } finally {
      await listener.end();
    }
  });
});

describe('semaphore release notifications', () => {
  it('a release of permits NOTIFYs the channel with semaphore:<id>, never a lock id', async () => {
    const listener = await rawClient();
    try {
      await listener.query('LISTEN fencelock_release');
      const key = `notify-sem:${crypto.randomUUID()}`;
      const expected = `semaphore:${semaphoreLockIds(advisoryLockId(key)).semaphoreId}`;
      const payloads: string[] = [];
      const heard = new Promise<void>((resolve) => {
        listener.on('notification', (message) => {
          if (message.payload === undefined) return;
          payloads.push(message.payload);
          if (message.payload === expected) resolve();
        });
      });
      const permit = await provider().acquireSemaphore(key, { limit: 2 });
      expect(await permit.release()).toBe(true);
      await heard;
      expect(payloads).not.toContain(advisoryLockId(key).toString());
    } finally {
      await listener.end();
    }
  });
});

describe('connections it was handed', () => {
  it('uses a handed pg.Client and never closes it, leaving nothing of its own on the session', async () => {
    const client = await rawClient();
    try {
      const a = provider({ connection: undefined, client });
      const lock = await a.acquire(`handed:${crypto.randomUUID()}`);
      await lock.release();
      await a.close();
      const { rows } = await client.query<{ timeout: string; listening: number }>(
        "SELECT current_setting('idle_session_timeout') AS timeout, (SELECT count(*)::int FROM pg_listening_channels()) AS listening",
      );
      expect(rows[0]).toEqual({ timeout: '0', listening: 0 });
    } finally {
      await client.end();
    }
  });

  it('leaves neither a semaphore slot nor the session-local acquire function on a handed pg.Client', async () => {
    const client = await rawClient();
    try {
      const a = provider({ connection: undefined, client });
      const key = `handed-sem:${crypto.randomUUID()}`;
      const permit = await a.acquireSemaphore(key, { limit: 2, permits: 2 });
      const { rows: who } = await client.query<{ pid: number; fn: string | null }>("SELECT pg_backend_pid() AS pid, to_regproc('pg_temp.fencelock_semaphore_acquire')::text AS fn");
      expect(who[0]?.fn).not.toBeNull();
      expect(await semaphoreSlots(await operator, key)).toEqual([0, 1].map((slot) => ({ pid: who[0]?.pid, slot })));
      await a.close();
      expect(permit.isHeld()).toBe(false);
      expect(await semaphoreSlots(await operator, key)).toEqual([]);
      const { rows } = await client.query<{ fn: string | null }>("SELECT to_regproc('pg_temp.fencelock_semaphore_acquire')::text AS fn");
      expect(rows[0]).toEqual({ fn: null });
    } finally {
      await client.end();
    }
  });

  it('checks one client out of a handed pg.Pool and destroys it on close (never returns a used session)', async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
    try {
      const a = provider({ connection: undefined, pool });
      const lock = await a.acquire(`pooled:${crypto.randomUUID()}`);
      expect(pool.totalCount).toBe(1);
      await lock.release();
      await a.close();
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
  });
});

describe('bad options', () => {
  it('refuses bad options with a typed error before any connection is made', () => {
    const bad: unknown[] = [
      {},
      { connection: postgresUrl, pool: {} },
      { connection: 42 },
      { connection: '' },
      { client: new pg.Pool() },
      { connection: postgresUrl, table: 'x; DROP TABLE y' },
      { connection: postgresUrl, channel: 'a-b' },
      { connection: postgresUrl, sessionTtlMs: 10 },
      { connection: postgresUrl, sessionTtlMs: 3_000, requestTimeoutMs: 2_000 },
      { connection: postgresUrl, lockId: 5 },
      { connection: postgresUrl, lockId: () => 1n, namespace: 'x' },
      { connection: postgresUrl, tabel: 'typo' },
    ];
    for (const options of bad) {
      expect(() => createPostgresLockProvider(options as never), JSON.stringify(options)).toThrow(expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT' }));
    }
  });

  it('refuses a lockId function that returns something other than a signed 64-bit bigint', async () => {
    const a = provider({ lockId: () => 2n ** 63n });
    await expect(a.tryAcquire('k')).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    const b = provider({ lockId: () => 7 as unknown as bigint });
    await expect(b.tryAcquire('k')).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    // Semaphores take their slots from the same id: refused the same way, and no session was opened for it.
    await expect(a.tryAcquireSemaphore('k', { limit: 2 })).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    await expect(b.inspectSemaphore('k')).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    // Elections hash the same id into their own: refused the same way.
    await expect(a.tryCampaign('k', { value: 'v' })).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    await expect(b.leader('k')).rejects.toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
    expect(a.backendPid).toBeUndefined();
    expect(b.backendPid).toBeUndefined();
  });
});

describe('the tables created on first use by many sessions at once', () => {
  it('every session gets its lock and permits, whichever of them wins the creation race', async () => {
    const client = await operator;
    // A fresh table name a round, so that the creations race; a catalog race shows in some rounds only.
    for (let round = 0; round < 20; round += 1) {
      const table = `fl_race_${crypto.randomUUID().replaceAll('-', '')}`;
      try {
        const racers = Array.from({ length: 6 }, () => provider({ table }));
        const key = `race:${crypto.randomUUID()}`;
        const permits = await Promise.all(racers.map((racer) => racer.tryAcquireSemaphore(key, { limit: racers.length })));
        expect(permits.every((held) => held !== null)).toBe(true);
        const locks = await Promise.all(racers.map((racer, i) => racer.tryAcquire(`${key}:${i}`)));
        expect(locks.map((lock) => lock?.fencingToken)).toEqual(racers.map(() => 1n));
        await Promise.all([...permits, ...locks].map((held) => held?.release()));
      } finally {
        await Promise.allSettled(made.splice(0).map((made) => made.close()));
        await client.query(`DROP TABLE IF EXISTS ${table}_sem, ${table}_semhold, ${table}, ${table}_holders`);
      }
    }
  });
});
