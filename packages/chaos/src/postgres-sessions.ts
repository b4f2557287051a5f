/**
 * What an operator does to one client's PostgreSQL session: `pg_terminate_backend`, the only way to
 * take a session advisory lock from its holder. Clients name their connection after their proc id
 * (`application_name`, see backends.ts), so the nemesis finds the holder's session by that name.
 */
import pg from 'pg';

/** Bound of the whole operation (connect + terminate + wait for the sessions' exit), ms. */
const TERMINATE_TIMEOUT_MS = 5_000;

/**
 * Terminates every session named `applicationName` on the server at 127.0.0.1:`port` and waits
 * (≤ 5 s in all) until each has exited, so its locks are free when this resolves.
 *
 * @returns how many sessions were terminated.
 */
export async function terminateSessionsOf(port: number, applicationName: string): Promise<number> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: TERMINATE_TIMEOUT_MS,
    query_timeout: TERMINATE_TIMEOUT_MS,
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    // The second argument makes the server wait for the backend's exit (PostgreSQL 14+), bounded.
    const { rows } = await client.query<{ terminated: boolean }>(
      'SELECT pg_terminate_backend(pid, $2) AS terminated FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
      [applicationName, TERMINATE_TIMEOUT_MS - 1_000],
    );
    return rows.filter((row) => row.terminated).length;
  } finally {
    await client.end().catch(() => undefined);
  }
}
