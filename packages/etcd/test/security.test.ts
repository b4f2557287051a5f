/**
 * Least privilege on a secured etcd (TLS with client certificates, authentication on): the lock user
 * can do its work and nothing more, other identities can neither break its locks nor queue for
 * them, and every refusal — wrong password, unknown user, a certificate the server or the client
 * refuses, a role that does not cover the keys — is LOCK_FORBIDDEN at once, never a wait until
 * `waitMs`. No credential appears in any error or event.
 */
import { readFileSync } from 'node:fs';
import { ReportLog, expectForbidden } from '@fencelock/conformance';
import { LockErrorCode, type LockProvider, isLockError } from '@fencelock/core';
import { SECURE_ETCD_OTHER_PREFIX, freePort, startSecureEtcd } from '@fencelock/test-infra';
import { Etcd3, type IOptions } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { type EtcdLockProviderOptions, createEtcdLockProvider } from '../src/index.js';

const secure = await startSecureEtcd();
const { certificates, clientCertificate, users } = secure;
type User = { username: string; password: string };
const ca = readFileSync(certificates.ca);
const tls = (pair = clientCertificate, trusted = ca): NonNullable<IOptions['credentials']> => ({
  rootCertificate: trusted,
  privateKey: readFileSync(pair.key),
  certChain: readFileSync(pair.cert),
});
const connection = (auth: User | undefined, credentials = tls(), hosts = secure.endpoint): IOptions => ({
  hosts,
  credentials,
  ...(auth === undefined ? {} : { auth }),
});

const providers: LockProvider[] = [];
const clients: Etcd3[] = [];
// Everything reported to the tests: errors thrown and events emitted, causes included.
const reports = new ReportLog();

function provider(auth: User | undefined, options: Partial<EtcdLockProviderOptions> = {}, credentials = tls(), hosts?: string): LockProvider {
  const made = reports.watch(createEtcdLockProvider({ connection: connection(auth, credentials, hosts), sessionTtlMs: 3_000, ...options }));
  providers.push(made);
  return made;
}

function raw(auth: User): Etcd3 {
  const client = new Etcd3(connection(auth));
  clients.push(client);
  return client;
}

const rejection = (promise: Promise<unknown>): Promise<unknown> => reports.rejection(promise);

afterAll(async () => {
  await Promise.allSettled(providers.map((made) => made.close()));
  for (const client of clients) client.close();
  await secure.stop();
}, 30_000);

describe('etcd least privilege: the lock user', () => {
  it('cannot lock or write outside its prefix', async () => {
    const elsewhere = provider(users.locker, { keyPrefix: SECURE_ETCD_OTHER_PREFIX });
    expectForbidden(await rejection(elsewhere.acquire('outside', { waitMs: 600_000 })), /^etcd refused queueing for the lock.*permission denied/);
    expectForbidden(await rejection(elsewhere.inspect('outside')), /^etcd refused reading the lock's keys: permission denied/);
    const error = await rejection(raw(users.locker).put(`${SECURE_ETCD_OTHER_PREFIX}x`).value('1').exec());
    expect((error as Error).constructor.name).toBe('EtcdPermissionDeniedError');
  });
});

describe('etcd least privilege: other identities cannot break a lock', () => {
  it("a read-only operator and another application can see the holder but not delete its key; the holder keeps the lock", async () => {
    const holder = provider(users.locker);
    await using lock = await holder.acquire('guarded');
    const { kvs } = await raw(users.root).getAll().prefix('fencelock/guarded/').exec();
    const holderKey = kvs[0]?.key;
    if (holderKey === undefined) throw new Error('no holder key');
    for (const intruder of [users.reader, users.other]) {
      const error = await rejection(raw(intruder).delete().key(holderKey).exec());
      expect((error as Error).constructor.name, intruder.username).toBe('EtcdPermissionDeniedError');
    }
    const reader = provider(users.reader);
    expect((await reader.inspect('guarded'))?.holders.map((h) => h.ownerId)).toEqual([lock.ownerId]);
    // Neither may queue: a refusal, at once, although the wait bound is ten minutes.
    for (const outsider of [reader, provider(users.other)]) {
      expectForbidden(await rejection(outsider.acquire('guarded', { waitMs: 600_000 })), /^etcd refused queueing for the lock.*permission denied/);
    }
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect((await raw(users.root).getAll().prefix('fencelock/guarded/').keys()).map(String)).toEqual([holderKey.toString()]);
  }, 30_000);
});

describe('etcd: refused credentials fail at once with LOCK_FORBIDDEN', () => {
  const cases: [string, () => LockProvider, RegExp][] = [
    ['a wrong password', () => provider({ username: users.locker.username, password: `${users.reader.password}x` }), /^etcd refused granting the session lease: authentication failed/],
    ['an unknown user', () => provider({ username: 'nobody', password: users.locker.password }), /^etcd refused granting the session lease: authentication failed/],
    ['no credentials where authentication is on', () => provider(undefined), /^etcd refused .*permission denied/],
    ['a client certificate from another CA', () => provider(users.locker, {}, tls(certificates.foreignClient)), /^etcd refused the TLS connection: the server refused our client certificate/],
    ['a server certificate from an untrusted CA', () => provider(users.locker, {}, tls(clientCertificate, readFileSync(certificates.foreignCa))), /^etcd refused the TLS connection: the server's certificate is not signed by a trusted CA/],
  ];
  it.each(cases)('%s', async (_what, make, message) => {
    expectForbidden(await rejection(make().acquire('refused', { waitMs: 600_000 })), message);
  }, 20_000);

  it('a TLS server that is down is LOCK_BACKEND_UNAVAILABLE, not a refusal', async () => {
    const down = provider(users.locker, { requestTimeoutMs: 500 }, tls(), `https://127.0.0.1:${await freePort()}`);
    const error = await rejection(down.tryAcquire('down'));
    expect(isLockError(error, LockErrorCode.BACKEND_UNAVAILABLE), String(error)).toBe(true);
  }, 20_000);
});

describe('etcd: credentials never leak', () => {
  it('appear in no error, cause or event reported by the tests above', () => {
    expect(reports.items.length).toBeGreaterThan(10);
    const secrets = [...Object.values(users).map((user) => user.password)];
    // Every line of every private key's body.
    for (const pair of [clientCertificate, certificates.foreignClient]) {
      secrets.push(...readFileSync(pair.key, 'utf8').split('\n').filter((line) => line.length > 20 && !line.startsWith('-----')));
    }
    expect(reports.leaked(secrets)).toEqual([]);
  });
});
