/**
 * The PostgreSQL subjects: fencelock's adapter, the raw minimal protocol on one `pg` client
 * (`pg_try_advisory_lock` / `pg_advisory_unlock`), and the `advisory-lock` npm package. Kept apart
 * from subjects.ts, which registers them with one line.
 */
import { createHash } from 'node:crypto';
import type { LockProvider } from '@fencelock/core';
import type advisoryLockModule from 'advisory-lock';
import type pg from 'pg';
import type { LockSession, Subject } from './subjects.js';

// The libraries are imported when a subject is opened (see subjects.ts).

/** advisory-lock's function, from a CommonJS build of TypeScript's `export default`. */
async function loadAdvisoryLock(): Promise<typeof advisoryLockModule.default> {
  // Node's ESM import hands over `exports` (its `default` is the function); vitest's interop hands
  // over the function itself.
  const module: { default: unknown } = await import('advisory-lock');
  const imported = module.default;
  return (typeof imported === 'function' ? imported : (imported as typeof advisoryLockModule).default) as typeof advisoryLockModule.default;
}

/** The key's advisory-lock id the way a hand-written client would hash it: the first 8 bytes of SHA-256, signed. */
function rawLockId(key: string): string {
  return createHash('sha256').update(`fencelock-bench-raw:${key}`).digest().readBigInt64BE(0).toString();
}

async function rawPgSession(url: string): Promise<LockSession> {
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client(url);
  client.on('error', () => undefined);
  await client.connect();
  // One statement at a time on the client, in call order (what pg 8 does for queries issued while
  // another runs, but deprecated, and refused by pg 9): the 64-keys scenario calls concurrently.
  let previous: Promise<unknown> = Promise.resolve();
  const query = <R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> => {
    const result = previous.then(() => client.query<R>(text, values));
    previous = result.catch(() => undefined);
    return result;
  };
  return {
    async lock(key) {
      const id = rawLockId(key);
      const { rows } = await query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS taken', [id]);
      if (rows[0]?.taken !== true) throw new Error(`raw PostgreSQL lock ${key} is held`);
      return async () => {
        await query('SELECT pg_advisory_unlock($1::bigint)', [id]);
      };
    },
    close: () => client.end(),
  };
}

/**
 * advisory-lock opens a new connection for every `lock()` / `tryLock()` and ends it on unlock (the
 * lock lives as long as that connection): that is the package's cost, measured as it is. Its
 * `lock()` blocks in `pg_advisory_lock` with no bound, so the bench uses `tryLock()` and the
 * package runs the scenarios without waiting only (uncontended, 64 keys).
 */
async function advisoryLockSession(url: string): Promise<LockSession> {
  const advisoryLock = await loadAdvisoryLock();
  const mutexes = advisoryLock(url);
  return {
    async lock(key) {
      const unlock = await mutexes(`fencelock-bench-advisory-lock:${key}`).tryLock();
      if (unlock === undefined) throw new Error(`advisory-lock ${key} is held`);
      return unlock;
    },
    close: async () => undefined,
  };
}

/**
 * The PostgreSQL subjects on the server at `url`, fencelock first. `fencelockSession` is the shared
 * adapter-to-session glue of subjects.ts; `sessionTtlMs` the session TTL of the latency scenarios.
 */
export function postgresSubjects(url: string, fencelockSession: (provider: LockProvider) => LockSession, sessionTtlMs: number): readonly Subject[] {
  const provider = async (ttlMs: number): Promise<LockProvider> => {
    const { createPostgresLockProvider } = await import('@fencelock/postgres');
    return createPostgresLockProvider({ connection: url, namespace: 'fencelock-bench:', sessionTtlMs: ttlMs });
  };
  return [
    {
      id: 'postgres/fencelock', backend: 'postgres', kind: 'fencelock', label: '@fencelock/postgres', waits: true,
      open: async () => fencelockSession(await provider(sessionTtlMs)),
      openProvider: provider,
    },
    {
      id: 'postgres/raw-pg', backend: 'postgres', kind: 'raw', label: 'raw pg pg_try_advisory_lock + pg_advisory_unlock (one client)', waits: false,
      open: () => rawPgSession(url),
    },
    {
      id: 'postgres/advisory-lock', backend: 'postgres', kind: 'peer', label: 'advisory-lock tryLock() (a connection per lock)', waits: false, package: 'advisory-lock',
      open: () => advisoryLockSession(url),
    },
  ];
}
