/**
 * No credential reaches telemetry: on a secured Redis (TLS, an ACL user), spans and metrics of
 * granted, refused (wrong password, keys outside the user's pattern) and released locks carry no
 * password — attributes, events and status messages included. Refusals are recorded as errors.
 */
import { readFileSync } from 'node:fs';
import { leakedSecrets } from '@fencelock/conformance';
import { isLockError } from '@fencelock/core';
import { createRedisLockProvider } from '@fencelock/redis';
import { startSecureRedis } from '@fencelock/test-infra';
import { afterAll, expect, it } from 'vitest';
import { instrumentLockProvider } from '../src/index.js';
import { OtelHarness } from './support/otel-harness.js';

const secure = await startSecureRedis({ users: { locker: 'resetchannels ~locks:* ~{*}fencelock:*:locks:* &fencelock:released* -@all +evalsha +eval +subscribe +unsubscribe +ping +time +get +set +del +exists +pexpire +pttl +publish' } });
afterAll(() => secure.stop());

it('spans and metrics of granted and refused locks on a secured Redis carry no password', async () => {
  const otel = new OtelHarness();
  const locker = secure.users.locker;
  if (locker === undefined) throw new Error('no locker');
  const open = (password: string, keyPrefix: string) =>
    createRedisLockProvider({
      connection: { host: '127.0.0.1', port: secure.port, tls: { ca: readFileSync(secure.certificates.ca) }, enableReadyCheck: false, username: 'locker', password },
      keyPrefix,
    });
  const granted = open(locker.password, 'locks:');
  const outside = open(locker.password, 'other:');
  const wrong = open(`${locker.password}-but-wrong`, 'locks:');
  const handles = [granted, outside, wrong].map((provider) => instrumentLockProvider(provider, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider }));
  try {
    await (await granted.acquire('job')).release();
    for (const refused of [outside, wrong]) {
      const error = await refused.acquire('job', { waitMs: 600_000 }).catch((caught: unknown) => caught);
      expect(isLockError(error, 'LOCK_FORBIDDEN'), String(error)).toBe(true);
    }
    const metrics = await otel.collect();
    const spans = otel.spans();
    expect(spans.length).toBeGreaterThanOrEqual(3);
    expect(spans.filter((span) => span.status.code === 2).length).toBeGreaterThanOrEqual(2);
    const secrets = [...Object.values(secure.users).map((user) => user.password), `${locker.password}-but-wrong`];
    expect(leakedSecrets([spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })), metrics.metrics], secrets)).toEqual([]);
  } finally {
    for (const handle of handles) handle[Symbol.dispose]();
    await Promise.all([granted.close(), outside.close(), wrong.close()]);
    await otel.shutdown();
  }
}, 30_000);
