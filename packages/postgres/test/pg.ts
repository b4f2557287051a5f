import { type TcpProxy, startTcpProxy, topology } from '@fencelock/test-infra';
import pg from 'pg';
import { advisoryLockId, electionLockId, semaphoreLockIds } from '../src/index.js';
import { lockIdParts } from '../src/lock-id.js';

/** The shared PostgreSQL (`FENCELOCK_POSTGRES_URL`, default 127.0.0.1:15432). */
export const postgresUrl = topology().postgresUrl;
const target = topology().servers.postgres[0]!;

/** A plain client of its own (an operator's session), connected. */
export async function rawClient(): Promise<pg.Client> {
  const client = new pg.Client(postgresUrl);
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** The connection URL through `proxy` instead of straight to the server. */
export function urlThrough(proxy: TcpProxy): string {
  const url = new URL(postgresUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return url.toString();
}

/** A TCP proxy in front of the shared server, for a provider that a test will cut off. */
export function proxyToPostgres(): Promise<TcpProxy> {
  return startTcpProxy({ targetHost: target.host, targetPort: target.port });
}

/** The server processes that hold the advisory lock of `key` (hashed in `namespace`). */
export function holderPids(client: pg.Client, key: string, namespace?: string): Promise<number[]> {
  return pidsHolding(client, advisoryLockId(key, namespace));
}

/** The server processes that hold election `name`'s advisory lock (hashed in `namespace`). */
export function leaderPids(client: pg.Client, name: string, namespace?: string): Promise<number[]> {
  return pidsHolding(client, electionLockId(advisoryLockId(name, namespace)));
}

/** The server processes that hold the bigint advisory lock `id`. */
async function pidsHolding(client: pg.Client, id: bigint): Promise<number[]> {
  const { classid, objid } = lockIdParts(id);
  const { rows } = await client.query<{ pid: number }>(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND classid = $1::oid AND objid = $2::oid`,
    [classid, objid],
  );
  return rows.map((row) => row.pid);
}

/**
 * Ends the session of every holder of `key`'s lock, as an operator would: the only way to take a
 * session advisory lock from its holder. Resolves once each has exited (waits up to 5 s each).
 */
export async function terminateHolders(client: pg.Client, key: string, namespace?: string): Promise<number> {
  const pids = await holderPids(client, key, namespace);
  for (const pid of pids) await client.query('SELECT pg_terminate_backend($1, 5000)', [pid]);
  return pids.length;
}

/** The slots of semaphore `key` held now, as `pg_locks` shows them (two-int4 advisory locks, `objsubid` 2). */
export async function semaphoreSlots(client: pg.Client, key: string, namespace?: string): Promise<{ pid: number; slot: number }[]> {
  const ids = semaphoreLockIds(advisoryLockId(key, namespace));
  const { rows } = await client.query<{ pid: number; slot: number }>(
    `SELECT pid, (objid::bigint - $2::bigint)::int AS slot FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND classid = $1::oid AND objid::bigint BETWEEN $2::bigint AND $2::bigint + 1023
     ORDER BY slot`,
    [ids.classid, ids.objidBase],
  );
  return rows;
}
