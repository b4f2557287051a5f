/**
 * Least privilege on a secured PostgreSQL (TLS with scram-sha-256 passwords only): the lock role of
 * the README's recipe can do everything the conformance suite does; another role cannot end the
 * holder's session (the one way to take a session advisory lock from its holder) nor touch the
 * token tables; every refusal — wrong password, an unencrypted connection, an untrusted server
 * certificate, a role without the table privileges — is LOCK_FORBIDDEN at once, and leaves no lock
 * behind. No credential appears in any error or event.
 */
import { readFileSync } from 'node:fs';
import { ReportLog, describeLockProvider, expectForbidden } from '@fencelock/conformance';
import { LockErrorCode, type LockProvider, isLockError } from '@fencelock/core';
import { freePort, startSecurePostgres } from '@fencelock/test-infra';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresLockProvider, type PostgresLockProviderOptions } from '../src/index.js';

// The README's recipe, verbatim: the tables made once by their owner, the lock role given exactly the
// statements the provider runs on them; a read-only operator role that inspect serves.
const RECIPE = {
  tables: `CREATE TABLE fencelock_tokens (lock_id bigint PRIMARY KEY, token bigint NOT NULL);
CREATE TABLE fencelock_tokens_holders (lock_id bigint NOT NULL, owner_id text NOT NULL, holder_session text NOT NULL,
  mode text NOT NULL, token bigint NOT NULL, metadata bytea, PRIMARY KEY (lock_id, owner_id));
CREATE TABLE fencelock_tokens_sem (semaphore_id bigint PRIMARY KEY, token bigint NOT NULL, semaphore_limit integer NOT NULL);
CREATE TABLE fencelock_tokens_semhold (semaphore_id bigint NOT NULL, owner_id text NOT NULL, holder_session text NOT NULL,
  slots integer[] NOT NULL, token bigint NOT NULL, metadata bytea, PRIMARY KEY (semaphore_id, owner_id));`,
  locker: `GRANT SELECT, INSERT, UPDATE ON fencelock_tokens, fencelock_tokens_sem TO locker;
GRANT SELECT, INSERT, DELETE ON fencelock_tokens_holders, fencelock_tokens_semhold TO locker;`,
  reader: 'GRANT SELECT ON fencelock_tokens_holders, fencelock_tokens_sem, fencelock_tokens_semhold TO reader; GRANT pg_read_all_stats TO reader;',
};

const secure = await startSecurePostgres({ roles: { locker: '', reader: '', other: '' } });
await secure.psql(RECIPE.tables);
await secure.psql(RECIPE.locker);
await secure.psql(RECIPE.reader);
const ca = readFileSync(secure.certificates.ca, 'utf8');
const role = (name: string): { user: string; password: string } => {
  const found = secure.users[name];
  if (found === undefined) throw new Error(`no role ${name}`);
  return { user: found.username, password: found.password };
};
const config = (extra: pg.ClientConfig): pg.ClientConfig => ({ host: '127.0.0.1', port: secure.port, database: 'postgres', ssl: { ca }, ...extra });
const reports = new ReportLog();
const providers: LockProvider[] = [];
const clients: pg.Client[] = [];

function provider(extra: pg.ClientConfig, options: Partial<PostgresLockProviderOptions> = {}): LockProvider {
  const made = reports.watch(createPostgresLockProvider({ connection: config(extra), sessionTtlMs: 3_000, ...options }));
  providers.push(made);
  return made;
}

async function raw(name: string): Promise<pg.Client> {
  const client = new pg.Client(config(role(name)));
  client.on('error', () => undefined);
  clients.push(client);
  await client.connect();
  return client;
}

afterAll(async () => {
  await Promise.allSettled(providers.map((made) => made.close()));
  await Promise.allSettled(clients.map((client) => client.end()));
  await secure.stop();
}, 30_000);

describeLockProvider({
  name: 'postgres over TLS as the lock role of the README',
  createProvider: () => provider(role('locker')),
  expectCapabilities: { fencing: 'per-key', lossDetection: true, notify: true, readWrite: true, expiry: 'session' },
});

describe('postgres least privilege', () => {
  it("another role can neither end the holder's session nor rewind its token; a reader sees the holder", async () => {
    const holder = provider(role('locker'));
    await using lock = await holder.acquire('guarded');
    const [pidRow] = (await (await raw('reader')).query<{ pid: number }>("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted")).rows;
    if (pidRow === undefined) throw new Error('no advisory lock held');
    const other = await raw('other');
    await expect(other.query('SELECT pg_terminate_backend($1)', [pidRow.pid])).rejects.toMatchObject({ code: '42501' });
    await expect(other.query('UPDATE fencelock_tokens SET token = 0')).rejects.toMatchObject({ code: '42501' });
    await expect((await raw('reader')).query('UPDATE fencelock_tokens SET token = 0')).rejects.toMatchObject({ code: '42501' });
    const reader = provider(role('reader'));
    expect((await reader.inspect('guarded'))?.holders.map((h) => h.ownerId)).toEqual([lock.ownerId]);
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
  }, 20_000);

  it('a role without the table privileges is refused at once, and its try leaves no lock behind', async () => {
    const outsider = provider(role('other'));
    expectForbidden(await reports.rejection(outsider.acquire('no-grants', { waitMs: 600_000 })), /^PostgreSQL refused acquiring lock "no-grants": permission denied \(42501/);
    // The try-lock ran before the insert was refused: undone, so the lock role gets the key at once.
    await using lock = await provider(role('locker')).acquire('no-grants', { waitMs: 5_000 });
    expect(lock.isHeld()).toBe(true);
  }, 20_000);

  it('a role without the semaphore tables\' privileges is refused at once, and leaves no permit behind', async () => {
    const outsider = provider(role('other'));
    expectForbidden(
      await reports.rejection(outsider.acquireSemaphore('no-grants-sem', { limit: 1, waitMs: 600_000 })),
      /^PostgreSQL refused acquiring semaphore "no-grants-sem": permission denied \(42501/,
    );
    await using permit = await provider(role('locker')).acquireSemaphore('no-grants-sem', { limit: 1, waitMs: 5_000 });
    expect(permit.isHeld()).toBe(true);
  }, 20_000);
});

describe('postgres: refused credentials and certificates are LOCK_FORBIDDEN at once', () => {
  const cases: [string, () => LockProvider, RegExp][] = [
    ['a wrong password', () => provider({ user: 'locker', password: 'not-the-password' }), /^PostgreSQL refused connecting to PostgreSQL: authentication failed \(28P01/],
    ['an unknown role', () => provider({ user: 'nobody', password: role('locker').password }), /^PostgreSQL refused connecting to PostgreSQL: authentication failed \(28P01/],
    ['an unencrypted connection', () => provider({ ...role('locker'), ssl: false }), /^PostgreSQL refused connecting to PostgreSQL: not allowed to connect \(28000/],
    ['a server certificate from an untrusted CA', () => provider({ ...role('locker'), ssl: { ca: readFileSync(secure.certificates.foreignCa, 'utf8') } }), /^PostgreSQL refused connecting to PostgreSQL: the server's certificate chain ends in an untrusted CA/],
  ];
  it.each(cases)('%s', async (_what, make, message) => {
    expectForbidden(await reports.rejection(make().acquire('refused', { waitMs: 600_000 })), message);
  }, 20_000);

  it('a server that is down is LOCK_BACKEND_UNAVAILABLE, not a refusal', async () => {
    const down = provider({ ...role('locker'), port: await freePort() });
    const error = await reports.rejection(down.tryAcquire('down'));
    expect(isLockError(error, LockErrorCode.BACKEND_UNAVAILABLE), String(error)).toBe(true);
  }, 20_000);
});

describe('postgres: credentials never leak', () => {
  it('appear in no error, cause or event reported by the tests above', () => {
    expect(reports.items.length).toBeGreaterThan(8);
    expect(reports.leaked(Object.values(secure.users).map((entry) => entry.password))).toEqual([]);
  });
});
