/**
 * Least privilege on a secured Redis (TLS only, the default user off): the lock user of the README's
 * recipe can do everything the conformance suite does and nothing outside its key pattern; other
 * identities can neither delete its lock nor rewind its fence counter; every refusal — wrong password,
 * no credentials, a certificate either side refuses, keys outside the pattern — is LOCK_FORBIDDEN
 * within one request, never a wait until `waitMs`. No credential appears in any error or event.
 */
import { readFileSync } from 'node:fs';
import { ReportLog, describeLockProvider, expectForbidden } from '@fencelock/conformance';
import { LockErrorCode, type LockProvider, isLockError } from '@fencelock/core';
import { freePort, startSecureRedis } from '@fencelock/test-infra';
import { Redis, type RedisOptions } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisLockProvider, type RedisLockProviderOptions } from '../src/index.js';
import { redisLockKeys } from '../src/redis-keys.js';
import { EXPECTED_CAPABILITIES } from './helpers.js';

// The README's recipe, verbatim: the lock keys under `locks:`, their side keys, the release channel,
// and exactly the commands the provider sends (at the top level and from its scripts).
const LOCKER_RULES =
  'resetchannels ~locks:* ~{*}fencelock:*:locks:* &fencelock:released* -@all +evalsha +eval +subscribe +unsubscribe +ping +time ' +
  '+get +set +del +exists +pexpire +pttl +publish +hget +hset +hdel +zadd +zcard +zrange +zrangebyscore +zrem +zremrangebyscore +zscore';
// A read-only operator: inspect (a script of reads) and nothing that writes.
const READER_RULES = 'resetchannels ~locks:* ~{*}fencelock:*:locks:* -@all +evalsha +eval +get +pttl +hget +zrange +zrangebyscore +zcard +zscore +time';
const KEY_PREFIX = 'locks:';

const secure = await startSecureRedis({ users: { locker: LOCKER_RULES, reader: READER_RULES, other: 'resetchannels ~other:* -@all +@all' } });
const ca = readFileSync(secure.certificates.ca);
const user = (name: string): { username: string; password: string } => {
  const found = secure.users[name];
  if (found === undefined) throw new Error(`no user ${name}`);
  return { username: found.username, password: found.password };
};
// No ready check: it needs INFO, which the recipe does not grant (see the README).
const connection = (extra: RedisOptions): RedisOptions => ({ host: '127.0.0.1', port: secure.port, tls: { ca }, enableReadyCheck: false, ...extra });
const reports = new ReportLog();
const providers: LockProvider[] = [];
const clients: Redis[] = [];

function provider(extra: RedisOptions, options: Partial<RedisLockProviderOptions> = {}): LockProvider {
  const made = reports.watch(createRedisLockProvider({ connection: connection(extra), keyPrefix: KEY_PREFIX, defaultTtlMs: 2_000, ...options }));
  providers.push(made);
  return made;
}

function raw(name: string): Redis {
  const client = new Redis(connection({ ...user(name), maxRetriesPerRequest: 1, lazyConnect: true }));
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}
const admin = raw('admin');

afterAll(async () => {
  await Promise.allSettled(providers.map((made) => made.close()));
  for (const client of clients) client.disconnect();
  await secure.stop();
}, 30_000);

describeLockProvider({
  name: 'redis over TLS as the ACL user of the README',
  createProvider: () => provider(user('locker')),
  expectCapabilities: EXPECTED_CAPABILITIES,
  harness: {
    // As admin, like an operator: the live entries of the line of waiters, and a DEL of the lock key.
    backendWaiters: async (key) => Number(await admin.zcount(redisLockKeys(KEY_PREFIX, key).waiters, `(${Date.now()}`, '+inf')),
    deleteLock: async (key) => {
      await admin.del(redisLockKeys(KEY_PREFIX, key).lock);
    },
  },
  shortTtlMs: 500,
});

describe('redis least privilege', () => {
  it('the lock user cannot lock, or write, outside its key pattern', async () => {
    const elsewhere = provider(user('locker'), { keyPrefix: 'other:' });
    expectForbidden(await reports.rejection(elsewhere.acquire('outside', { waitMs: 600_000 })), /^Redis refused acquiring lock "outside": permission denied \(NOPERM/);
    await expect(raw('locker').set('other:x', '1')).rejects.toThrow(/NOPERM/);
  }, 20_000);

  it("other identities can neither delete the holder's key nor rewind its fence; a reader sees the holder", async () => {
    const holder = provider(user('locker'));
    await using lock = await holder.acquire('guarded');
    const keys = redisLockKeys(KEY_PREFIX, 'guarded');
    for (const name of ['reader', 'other']) {
      await expect(raw(name).del(keys.lock), name).rejects.toThrow(/NOPERM/);
      await expect(raw(name).set(keys.fence, '0'), name).rejects.toThrow(/NOPERM/);
    }
    const reader = provider(user('reader'));
    expect((await reader.inspect('guarded'))?.holders.map((h) => h.ownerId)).toEqual([lock.ownerId]);
    expectForbidden(await reports.rejection(reader.acquire('guarded', { waitMs: 600_000 })), /^Redis refused acquiring lock "guarded": permission denied/);
    expect(await admin.get(keys.lock)).toBe(lock.ownerId);
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
  }, 20_000);
});

describe('redis: refused credentials and certificates are LOCK_FORBIDDEN within one request', () => {
  const foreign = secure.certificates.foreignClient;
  const cases: [string, () => LockProvider, RegExp][] = [
    ['a wrong password', () => provider({ username: 'locker', password: 'not-the-password' }), /authentication failed \(WRONGPASS/],
    ['an unknown user', () => provider({ username: 'nobody', password: user('locker').password }), /authentication failed \(WRONGPASS/],
    ['no credentials (the default user is off)', () => provider({}), /authentication required/],
    ['a server certificate from an untrusted CA', () => provider({ ...user('locker'), tls: { ca: readFileSync(secure.certificates.foreignCa) } }), /the server's certificate chain ends in an untrusted CA/],
    ['a client certificate from another CA', () => provider({ ...user('locker'), tls: { ca, cert: readFileSync(foreign.cert), key: readFileSync(foreign.key) } }), /the server refused our client certificate/],
  ];
  it.each(cases)('%s', async (_what, make, message) => {
    // A ten-minute wait: only a refusal settles the call within the test's time.
    expectForbidden(await reports.rejection(make().acquire('refused', { waitMs: 600_000 })), message);
  }, 20_000);

  it('a client certificate from another CA, on several connections at once: each one is refused, whichever way its socket ends', async () => {
    // A TLS 1.3 client finishes its handshake before the server has checked its certificate: the
    // server's alert or a bare reset (of the AUTH written meanwhile) ends the connection, at random.
    const made = Array.from({ length: 6 }, () => provider({ ...user('locker'), tls: { ca, cert: readFileSync(foreign.cert), key: readFileSync(foreign.key) } }));
    const rejections = await Promise.all(made.map((one) => reports.rejection(one.acquire('refused', { waitMs: 600_000 }))));
    for (const rejection of rejections) expectForbidden(rejection, /the server refused our client certificate/);
  }, 20_000);

  it('through node-redis (with an error listener of its owner): an untrusted server certificate', async () => {
    const client = createClient({ url: secure.url, username: 'locker', password: user('locker').password, socket: { tls: true, ca: readFileSync(secure.certificates.foreignCa) } });
    client.on('error', () => undefined);
    const made = reports.watch(createRedisLockProvider({ client, keyPrefix: KEY_PREFIX, defaultTtlMs: 2_000 }));
    try {
      expectForbidden(await reports.rejection(made.acquire('refused', { waitMs: 600_000 })), /the server's certificate chain ends in an untrusted CA/);
    } finally {
      await made.close();
      if (client.isOpen) client.destroy();
    }
  }, 20_000);

  it('a TLS server that is down is LOCK_BACKEND_UNAVAILABLE, not a refusal', async () => {
    const down = provider({ ...user('locker'), port: await freePort() }, { requestTimeoutMs: 300 });
    const error = await reports.rejection(down.tryAcquire('down'));
    expect(isLockError(error, LockErrorCode.BACKEND_UNAVAILABLE), String(error)).toBe(true);
  }, 20_000);
});

describe('redis: credentials never leak', () => {
  it('appear in no error, cause or event reported by the tests above', () => {
    expect(reports.items.length).toBeGreaterThan(10);
    const secrets = Object.values(secure.users).map((entry) => entry.password);
    for (const path of [secure.clientCertificate.key, secure.certificates.foreignClient.key]) {
      secrets.push(...readFileSync(path, 'utf8').split('\n').filter((line) => line.length > 20 && !line.startsWith('-----')));
    }
    expect(reports.leaked(secrets)).toEqual([]);
  });
});
