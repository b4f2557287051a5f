/**
 * Credentials and TLS material reach the backend from files and the environment: `hold` works on a
 * secured etcd as the lock user and on ZooKeeper under digest authentication; a refused identity
 * exits with 77 (LOCK_FORBIDDEN) at once, with a hint; nothing fencelock prints carries the password.
 * Bad combinations are usage errors (64) before any connection.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSecureEtcd, startSecurePostgres, startSecureRedis, topology } from '@fencelock/test-infra';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/index.js';
import { BIN, runFencelock } from './support/fencelock-process.js';

const dir = mkdtempSync(join(tmpdir(), 'fencelock-cli-access-'));
const secure = await startSecureEtcd();
// The adapters' READMEs' recipes (their own security tests check them in full).
const secureRedis = await startSecureRedis({
  users: {
    locker:
      'resetchannels ~locks:* ~{*}fencelock:*:locks:* &fencelock:released* -@all +evalsha +eval +subscribe +unsubscribe +ping +time ' +
      '+get +set +del +exists +pexpire +pttl +publish +hget +hset +hdel +zadd +zcard +zrange +zrangebyscore +zrem +zremrangebyscore +zscore',
  },
});
const securePostgres = await startSecurePostgres({ roles: { locker: '' } });
await securePostgres.psql(`CREATE TABLE fencelock_tokens (lock_id bigint PRIMARY KEY, token bigint NOT NULL);
CREATE TABLE fencelock_tokens_holders (lock_id bigint NOT NULL, owner_id text NOT NULL, holder_session text NOT NULL,
  mode text NOT NULL, token bigint NOT NULL, metadata bytea, PRIMARY KEY (lock_id, owner_id));
GRANT SELECT, INSERT, UPDATE ON fencelock_tokens TO locker;
GRANT SELECT, INSERT, DELETE ON fencelock_tokens_holders TO locker;`);
afterAll(async () => {
  await Promise.all([secure.stop(), secureRedis.stop(), securePostgres.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

function passwordFile(password: string): string {
  const path = join(dir, `${randomUUID()}.password`);
  writeFileSync(path, `${password}\n`, { mode: 0o600 });
  return path;
}

const etcdEnv = {
  FENCELOCK_BACKEND: 'etcd',
  FENCELOCK_ETCD_ENDPOINTS: secure.endpoint,
  FENCELOCK_TLS_CA: secure.certificates.ca,
  FENCELOCK_TLS_CERT: secure.clientCertificate.cert,
  FENCELOCK_TLS_KEY: secure.clientCertificate.key,
};
const secrets = [secure, secureRedis, securePostgres].flatMap((server) => Object.values(server.users).map((user) => user.password));

function expectNoSecret(output: { stdout: string; stderr: string }): void {
  for (const secret of secrets) expect(`${output.stdout}${output.stderr}`.includes(secret)).toBe(false);
}

describe('fencelock on a secured etcd', () => {
  it('holds a lock as the lock user, the password from a file and TLS from the environment', async () => {
    const { locker } = secure.users;
    const result = await runFencelock(['hold', '--user', locker.username, '--password-file', passwordFile(locker.password), 'job', '--', 'sh', '-c', 'echo "token=$FENCELOCK_TOKEN"'], etcdEnv);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^token=\d+$/m);
    expectNoSecret(result);
  });

  it('takes the password from FENCELOCK_PASSWORD and inspects as the read-only user', async () => {
    const { reader } = secure.users;
    const result = await runFencelock(['inspect', 'job'], { ...etcdEnv, FENCELOCK_USER: reader.username, FENCELOCK_PASSWORD: reader.password });
    expect(result.code, result.stderr).toBe(0);
    expectNoSecret(result);
  });

  it.each([
    ['a wrong password', 'locker', 'not-the-password', /etcd refused .*: authentication failed/],
    ['a user whose role does not cover the locks', 'other', undefined, /etcd refused .*: permission denied/],
  ])('exits 77 at once for %s, with a hint and no secret', async (_what, username, password, message) => {
    const user = Object.values(secure.users).find((candidate) => candidate.username === username);
    if (user === undefined) throw new Error(`no user ${username}`);
    // A ten-minute wait: only a refusal ends the run within the test's time.
    const result = await runFencelock(['hold', '--wait', '10m', '--user', username, '--password-file', passwordFile(password ?? user.password), 'job', '--', 'true'], etcdEnv);
    expect(result.code, result.stderr).toBe(ExitCode.FORBIDDEN);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/--password-file/);
    expectNoSecret(result);
  }, 20_000);
});

describe('fencelock on a secured Redis and PostgreSQL', () => {
  it.each([
    ['redis', () => ({ FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: secureRedis.url, FENCELOCK_REDIS_KEY_PREFIX: 'locks:', FENCELOCK_TLS_CA: secureRedis.certificates.ca }), () => secureRedis.users.locker],
    ['postgres', () => ({ FENCELOCK_BACKEND: 'postgres', FENCELOCK_POSTGRES_URL: securePostgres.url, FENCELOCK_TLS_CA: securePostgres.certificates.ca }), () => securePostgres.users.locker],
  ])('%s: holds as the lock user over TLS, and a wrong password exits 77', async (_backend, env, locker) => {
    const user = locker();
    if (user === undefined) throw new Error('no locker');
    const held = await runFencelock(['hold', '--user', user.username, '--password-file', passwordFile(user.password), 'job', '--', 'sh', '-c', 'echo "token=$FENCELOCK_TOKEN"'], env());
    expect(held.code, held.stderr).toBe(0);
    expect(held.stdout).toMatch(/^token=\d+$/m);
    const refused = await runFencelock(['hold', '--wait', '10m', '--user', user.username, '--password-file', passwordFile('not-the-password'), 'job', '--', 'true'], env());
    expect(refused.code, refused.stderr).toBe(ExitCode.FORBIDDEN);
    expect(refused.stderr).toMatch(/refused .*authentication failed/);
    expectNoSecret(held);
    expectNoSecret(refused);
  }, 30_000);
});

describe('fencelock on ZooKeeper with digest authentication', () => {
  it('holds as one identity; another identity is refused with 77 while it holds', async () => {
    const root = `/fencelock-cli-access-${randomUUID().slice(0, 8)}`;
    const env = { FENCELOCK_BACKEND: 'zookeeper', FENCELOCK_ZK_HOSTS: topology().zkConnectionString, FENCELOCK_ZK_ROOT: root };
    const owner = { user: 'cli-owner', password: randomUUID() };
    const script = `FENCELOCK_USER=cli-intruder FENCELOCK_PASSWORD=${randomUUID()} "${process.execPath}" "${BIN}" hold --no-wait job -- true; echo "intruder=$?"`;
    const result = await runFencelock(['hold', '--user', owner.user, '--password-file', passwordFile(owner.password), 'job', '--', 'sh', '-c', script], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^intruder=77$/m);
    expect(result.stdout.includes(owner.password)).toBe(false);
  }, 30_000);
});

describe('access settings are checked before any connection', () => {
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['a user without a password', ['--user', 'locker'], etcdEnv, /--user needs a password/],
    ['a password without a user', [], { ...etcdEnv, FENCELOCK_PASSWORD: 'x' }, /a password needs a user/],
    ['a client certificate without its key', [], { ...etcdEnv, FENCELOCK_TLS_KEY: '' }, /--tls-cert and --tls-key together/],
    ['TLS material with an http endpoint', [], { ...etcdEnv, FENCELOCK_ETCD_ENDPOINTS: 'http://127.0.0.1:2379' }, /every address must be https:\/\//],
    ['TLS with ZooKeeper', [], { FENCELOCK_BACKEND: 'zookeeper', FENCELOCK_TLS_CA: secure.certificates.ca }, /cannot speak TLS/],
    ['TLS material with a redis:// address', [], { FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: 'redis://127.0.0.1:6379', FENCELOCK_TLS_CA: secure.certificates.ca }, /every address must be rediss:\/\//],
    ['a missing password file', ['--user', 'locker', '--password-file', '/nonexistent/password'], etcdEnv, /cannot read the password file/],
  ];
  it.each(cases)('%s is a usage error (64)', async (_what, args, env, message) => {
    const result = await runFencelock(['inspect', ...args, 'job'], env);
    expect(result.code, result.stderr).toBe(ExitCode.USAGE);
    expect(result.stderr).toMatch(message);
  });
});
