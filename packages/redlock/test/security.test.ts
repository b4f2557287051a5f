/**
 * Redlock over three secured masters (TLS only, the ACL user of @fencelock/redis's recipe): the
 * lock user acquires; a refusal on enough masters to keep a majority out of reach is LOCK_FORBIDDEN
 * at once (its `nodes` say where), while a refusal on a minority still leaves the majority to grant.
 */
import { readFileSync } from 'node:fs';
import { ReportLog, describeLockProvider } from '@fencelock/conformance';
import { type LockError, LockErrorCode, type LockProvider, isLockError } from '@fencelock/core';
import { type SecureRedis, startSecureRedis } from '@fencelock/test-infra';
import { afterAll, describe, expect, it } from 'vitest';
import { type RedlockMasterOptions, createRedlockLockProvider } from '../src/index.js';

const LOCKER_RULES =
  'resetchannels ~locks:* ~{*}fencelock:*:locks:* &fencelock:redlock:released* -@all +evalsha +eval +subscribe +unsubscribe +ping +time ' +
  '+get +set +del +exists +pexpire +pttl +publish +hget +hset +hdel +zadd +zcard +zrange +zrangebyscore +zrem +zremrangebyscore +zscore';

const masters: SecureRedis[] = await Promise.all([0, 1, 2].map(() => startSecureRedis({ users: { locker: LOCKER_RULES } })));
const reports = new ReportLog();
const providers: LockProvider[] = [];
afterAll(async () => {
  await Promise.allSettled(providers.map((made) => made.close()));
  await Promise.all(masters.map((master) => master.stop()));
}, 30_000);

function master(server: SecureRedis, password?: string): RedlockMasterOptions {
  const locker = server.users.locker;
  if (locker === undefined) throw new Error('no locker user');
  return { host: '127.0.0.1', port: server.port, tls: { ca: readFileSync(server.certificates.ca) }, enableReadyCheck: false, username: 'locker', password: password ?? locker.password };
}

function provider(wrongOn: readonly number[]): LockProvider {
  const made = reports.watch(
    createRedlockLockProvider({ masters: masters.map((server, index) => master(server, wrongOn.includes(index) ? 'not-the-password' : undefined)), keyPrefix: 'locks:', defaultTtlMs: 2_000 }),
  );
  providers.push(made);
  return made;
}

// The suite's cases that need no operator powers, as the lock user on every master.
describeLockProvider({
  name: 'redlock over three secured masters as the ACL user of the recipe',
  createProvider: () => provider([]),
  expectCapabilities: { fencing: 'none', semaphore: 'none' },
  shortTtlMs: 400,
});

describe('redlock over secured masters', () => {
  it('the lock user acquires on every master', async () => {
    await using lock = await provider([]).acquire('secured');
    expect(lock.isHeld()).toBe(true);
  }, 20_000);

  it('a wrong password on one master of three still leaves a majority', async () => {
    await using lock = await provider([1]).acquire('minority');
    expect(lock.isHeld()).toBe(true);
  }, 20_000);

  it('a wrong password on two masters of three is LOCK_FORBIDDEN at once, naming them', async () => {
    const error = await reports.rejection(provider([0, 2]).acquire('majority', { waitMs: 600_000 }));
    expect(isLockError(error, LockErrorCode.FORBIDDEN), String(error)).toBe(true);
    expect((error as LockError).message).toMatch(/^Redis refused acquiring lock "majority" on 2 of 3 masters: authentication failed \(WRONGPASS/);
    expect((error as LockError).nodes?.map((node) => node.outcome)).toEqual(['error', 'granted', 'error']);
  }, 20_000);

  it('no password appears in what was reported', () => {
    expect(reports.items.length).toBeGreaterThan(3);
    expect(reports.leaked(masters.flatMap((server) => Object.values(server.users).map((user) => user.password)))).toEqual([]);
  });
});
