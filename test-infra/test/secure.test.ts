import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateCertificates, startSecurePostgres, startSecureRedis } from '../src/index.js';

describe('generateCertificates', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('writes a CA, a server certificate for 127.0.0.1 and client certificates signed by it, keys private', async () => {
    const dir = join(await mkdtemp(join(tmpdir(), 'fencelock-certs-test-')), 'tls');
    dirs.push(dir);
    const made = await generateCertificates(dir, ['alice']);
    const ca = new X509Certificate(await readFile(made.ca));
    const server = new X509Certificate(await readFile(made.server.cert));
    const alice = made.clients.alice;
    if (alice === undefined) throw new Error('no client certificate');
    const client = new X509Certificate(await readFile(alice.cert));
    const foreign = new X509Certificate(await readFile(made.foreignClient.cert));
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.verify(ca.publicKey)).toBe(true);
    expect(client.verify(ca.publicKey)).toBe(true);
    expect(client.subject).toContain('CN=alice');
    expect(foreign.verify(ca.publicKey)).toBe(false);
    for (const key of [made.server.key, alice.key, made.foreignClient.key]) expect((await stat(key)).mode & 0o077).toBe(0);
    expect((await stat(dir)).mode & 0o077).toBe(0);
  });
});

describe('startSecureRedis', () => {
  it('serves TLS only, with the default user off and the users asked for', async () => {
    const redis = await startSecureRedis({ users: { reader: 'resetchannels ~locks:* -@all +get' } });
    try {
      expect(redis.url).toBe(`rediss://127.0.0.1:${redis.port}`);
      expect((await redis.redisCli(['PING'])).trim()).toBe('PONG');
      const acl = await redis.redisCli(['ACL', 'LIST']);
      expect(acl).toMatch(/^user default off/m);
      expect(acl).toMatch(/^user reader on .*~locks:\* resetchannels -@all \+get$/m);
      // The passwords are stored hashed: the plain ones appear nowhere in the server's answers.
      for (const user of Object.values(redis.users)) expect(acl.includes(user.password)).toBe(false);
    } finally {
      await redis.stop();
    }
    expect(redis.node.running).toBe(false);
  }, 60_000);
});

describe('startSecurePostgres', () => {
  it('takes TLS connections with scram passwords only, and creates the roles asked for', async () => {
    const postgres = await startSecurePostgres({ roles: { locker: 'GRANT pg_read_all_settings TO locker' } });
    try {
      expect(postgres.url).toBe(`postgres://127.0.0.1:${postgres.port}/postgres`);
      expect((await postgres.psql("SELECT rolname FROM pg_roles WHERE rolname = 'locker'")).trim()).toBe('locker');
      expect((await postgres.psql("SELECT rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid WHERE rolname = 'locker'")).trim()).toBe('t');
      expect((await postgres.psql('SHOW ssl')).trim()).toBe('on');
      const hba = await postgres.psql('SELECT type, auth_method FROM pg_hba_file_rules ORDER BY line_number');
      expect(hba.trim().split('\n')).toEqual(['local|trust', 'hostssl|scram-sha-256', 'host|reject']);
    } finally {
      await postgres.stop();
    }
    expect(postgres.node.running).toBe(false);
  }, 90_000);
});
