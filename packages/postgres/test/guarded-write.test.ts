import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresLockProvider, createPostgresLockProvider, guardedWrite } from '../src/index.js';
import { postgresUrl, rawClient, terminateHolders } from './pg.js';

// The protected data lives in the same database as the fences: one table per run of this file.
const ITEMS = `gw_items_${crypto.randomUUID().replaceAll('-', '')}`;
const APPLICATION = `fencelock-gw-${process.pid}`;
const pool = new pg.Pool({ connectionString: postgresUrl, max: 4, application_name: APPLICATION });
const operator = rawClient();

beforeAll(async () => {
  await pool.query(`CREATE TABLE ${ITEMS} (resource text NOT NULL, value text NOT NULL)`);
});
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${ITEMS}`);
  await pool.end();
  await (await operator).end();
});

const made: PostgresLockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(made.splice(0).map((provider) => provider.close()));
});
function provider(): PostgresLockProvider {
  const created = createPostgresLockProvider({ connection: postgresUrl, sessionTtlMs: 3_000 });
  made.push(created);
  return created;
}

async function values(resource: string): Promise<string[]> {
  const { rows } = await pool.query<{ value: string }>(`SELECT value FROM ${ITEMS} WHERE resource = $1 ORDER BY value`, [resource]);
  return rows.map((row) => row.value);
}
async function fence(resource: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ token: string }>('SELECT token::text AS token FROM fencelock_fences WHERE resource = $1', [resource]);
  return rows[0]?.token;
}
function insert(resource: string, value: string): (tx: pg.ClientBase) => Promise<void> {
  return async (tx) => {
    await tx.query(`INSERT INTO ${ITEMS} (resource, value) VALUES ($1, $2)`, [resource, value]);
  };
}

describe('guardedWrite', () => {
  it("refuses a paused holder's late write inside its transaction once a newer holder wrote: nothing of it commits", async () => {
    const [a, b] = [provider(), provider()];
    const key = `gw:${crypto.randomUUID()}`;
    const first = await a.acquire(key);
    await guardedWrite(pool, { resource: key, token: first.fencingToken! }, insert(key, 'a-1'));
    // The holder "pauses": its session is ended behind its back and a second holder takes over and writes.
    expect(await terminateHolders(await operator, key)).toBe(1);
    const second = await b.acquire(key, { waitMs: 10_000 });
    expect(second.fencingToken! > first.fencingToken!).toBe(true);
    await guardedWrite(pool, { resource: key, token: second.fencingToken! }, insert(key, 'b-1'));
    // The paused holder resumes and sends the write it had prepared, unaware (no signal given).
    let ran = false;
    const late = guardedWrite(pool, { resource: key, token: first.fencingToken! }, async (tx) => {
      ran = true;
      await insert(key, 'a-late')(tx);
    });
    await expect(late).rejects.toMatchObject({ code: 'LOCK_STALE_TOKEN', key });
    expect(ran).toBe(false);
    expect(await values(key)).toEqual(['a-1', 'b-1']);
    expect(await fence(key)).toBe(second.fencingToken!.toString());
    // The pool got its connection back in a clean state (no transaction left open).
    const { rows } = await pool.query<{ open: number }>("SELECT count(*)::int AS open FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND application_name = $1", [APPLICATION]);
    expect(rows[0]?.open).toBe(0);
    await second.release();
  });

  it('a newer holder waits for an older holder\'s guarded write in progress, then writes; the older one is refused afterwards', async () => {
    const key = `gw:${crypto.randomUUID()}`;
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const older = guardedWrite(pool, { resource: key, token: 10n }, async (tx) => {
      await insert(key, 'older')(tx);
      inside();
      await finished;
    });
    await entered;
    const newer = guardedWrite(pool, { resource: key, token: 11n }, insert(key, 'newer'));
    // The newer write is blocked on the fence row the older transaction holds (seen by the server).
    const waiting = await waitForLockWaiter();
    expect(waiting).toBe(true);
    finish();
    await older;
    await newer;
    expect(await values(key)).toEqual(['newer', 'older']);
    await expect(guardedWrite(pool, { resource: key, token: 10n }, insert(key, 'older-again'))).rejects.toMatchObject({ code: 'LOCK_STALE_TOKEN' });
    expect(await fence(key)).toBe('11');
  });

  it('rolls the fence record back with a write that throws (the token stays usable), and hands the error on', async () => {
    const key = `gw:${crypto.randomUUID()}`;
    const boom = new Error('constraint of the caller');
    await expect(
      guardedWrite(pool, { resource: key, token: 5n }, async (tx) => {
        await insert(key, 'half')(tx);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await values(key)).toEqual([]);
    expect(await fence(key)).toBeUndefined();
    expect(await guardedWrite(pool, { resource: key, token: 5n }, async (tx) => (await tx.query('SELECT 42 AS x')).rows[0])).toEqual({ x: 42 });
  });

  it('accepts one write per token by default, several with acceptSameToken; runs on a pg.Client too', async () => {
    const key = `gw:${crypto.randomUUID()}`;
    const client = await rawClient();
    try {
      await guardedWrite(client, { resource: key, token: 7n }, insert(key, 'one'));
      await expect(guardedWrite(client, { resource: key, token: 7n }, insert(key, 'two'))).rejects.toMatchObject({ code: 'LOCK_STALE_TOKEN' });
      await guardedWrite(client, { resource: key, token: 7n, acceptSameToken: true }, insert(key, 'three'));
      expect(await values(key)).toEqual(['one', 'three']);
      // Tokens beyond int64 are numbers like any other.
      await guardedWrite(client, { resource: key, token: 2n ** 70n }, insert(key, 'huge'));
      expect(await fence(key)).toBe((2n ** 70n).toString());
    } finally {
      await client.end();
    }
  });

  it('rolls back a write whose lock is known lost before it commits (signal)', async () => {
    const a = provider();
    const key = `gw:${crypto.randomUUID()}`;
    const lock = await a.acquire(key);
    const write = guardedWrite(pool, { resource: key, token: lock.fencingToken!, signal: lock.signal }, async (tx) => {
      await insert(key, 'lost-midway')(tx);
      await terminateHolders(await operator, key);
      await signalled(lock.signal, 5_000);
    });
    await expect(write).rejects.toMatchObject({ code: 'LOCK_LOST' });
    expect(await values(key)).toEqual([]);
  });

  it('refuses bad input with a typed error before any I/O', async () => {
    // Nothing listens on port 1: a call that reached the network would fail differently.
    const nowhere = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/postgres' });
    const noop = async (): Promise<void> => undefined;
    const bad: [unknown, unknown, unknown][] = [
      [nowhere, { resource: '', token: 1n }, noop],
      [nowhere, { resource: 'r', token: 1 }, noop],
      [nowhere, { resource: 'r' }, noop],
      [nowhere, { resource: 1, token: 1n }, noop],
      [nowhere, { resource: '\uD800', token: 1n }, noop],
      [nowhere, { resource: 'r', token: 1n, table: 'x; DROP TABLE y' }, noop],
      [nowhere, { resource: 'r', token: 1n, timeoutMs: 0 }, noop],
      [nowhere, { resource: 'r', token: 1n, acceptSameToken: 'yes' }, noop],
      [nowhere, { resource: 'r', token: 1n, tokn: 2n }, noop],
      [nowhere, { resource: 'r', token: 1n }, 'not a function'],
      [{}, { resource: 'r', token: 1n }, noop],
    ];
    for (const [db, options, write] of bad) {
      await expect(guardedWrite(db as never, options as never, write as never), JSON.stringify(options, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))).rejects.toMatchObject({
        code: 'LOCK_INVALID_ARGUMENT',
      });
    }
    const aborted = AbortSignal.abort(new Error('already lost'));
    await expect(guardedWrite(nowhere, { resource: 'r', token: 1n, signal: aborted }, noop)).rejects.toThrow('already lost');
    expect(nowhere.totalCount).toBe(0);
    await nowhere.end();
  });
});

/** Resolves once `signal` aborts (at once if it has); rejects after `ms`. */
function signalled(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not aborted within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** Whether a session of this database waits on a row lock, polled a bounded number of times. */
async function waitForLockWaiter(): Promise<boolean> {
  const client = await operator;
  for (let i = 0; i < 200; i += 1) {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = $1 AND query LIKE 'INSERT INTO \"fencelock_fences\"%'",
      [APPLICATION],
    );
    if ((rows[0]?.n ?? 0) > 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}
