/**
 * Connection faults through each client library besides ioredis 5 (which faults.test.ts covers), on
 * a dedicated server with AOF (appendfsync always): the client's own connection events (GLIDE has
 * none: the outcomes of its requests) must reach the handles (`uncertain` on a reset link, then
 * `recovered` or `lost` after reconnecting), and a
 * restarted server that forgot the scripts must still run them (NOSCRIPT, then the script itself).
 */
import { nextEvent } from '@fencelock/conformance';
import type { LockProvider } from '@fencelock/core';
import { startRedisServer, startTcpProxy, type RedisServer, type TcpProxy } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_FLAVOURS, handedClients } from './clients.js';
import { expectResetRecoversOrLoses } from './helpers.js';

let durable: RedisServer;
let proxy: TcpProxy;
beforeAll(async () => {
  durable = await startRedisServer({ persistence: true });
  proxy = await startTcpProxy({ targetPort: durable.port });
}, 60_000);
afterAll(async () => {
  await proxy?.close();
  await durable?.stop();
});

const open: LockProvider[] = [];
afterEach(async () => {
  proxy.setMode('pass');
  await Promise.all(open.splice(0).map((provider) => provider.close()));
});

const { ioredis6Resp3, iovalkey, nodeRedis6Resp3, nodeRedis5Resp2, glideResp3 } = CLIENT_FLAVOURS;
for (const flavour of [ioredis6Resp3, iovalkey, nodeRedis6Resp3, nodeRedis5Resp2, glideResp3]) {
  describe(`connection faults through ${flavour.name}`, () => {
    const providerOn = async (url: string): Promise<LockProvider> => {
      const provider = await handedClients(() => flavour.standalone(url), { defaultTtlMs: 10_000, requestTimeoutMs: 500 }).createProvider();
      open.push(provider);
      return provider;
    };

    it('a reset link marks the handle uncertain; after reconnecting it recovers (the key is there) or is lost (it is not)', async () => {
      const through = await providerOn(`redis://127.0.0.1:${proxy.port}`);
      // Without drop reports (GLIDE) the drop is seen by the first extension after it: a third of the
      // 10 s TTL, plus the client's request timeout.
      const uncertainWithinMs = flavour.reportsDrops ? 5_000 : 10_000;
      await expectResetRecoversOrLoses(through, proxy, durable.port, [`faults:kept:${randomUUID()}`, `faults:taken:${randomUUID()}`], uncertainWithinMs);
    }, 30_000);

    it('a server restarted on its AOF keeps the lock, and the scripts it forgot are sent again', async () => {
      const locks = await providerOn(durable.url);
      const name = `faults:restart:${randomUUID()}`;
      const first = await locks.acquire(name);
      // A library that reports drops makes the handle uncertain, then recovered; through GLIDE a
      // restart no request saw passes unnoticed, and the lock is simply still held.
      const recovered = flavour.reportsDrops ? nextEvent(locks, 'recovered', (e) => e.ownerId === first.ownerId, 15_000) : undefined;
      await durable.restart();
      await recovered;
      expect(first.state).toBe('held');
      // The release script is unknown to the restarted server: NOSCRIPT, then the script itself.
      expect(await first.release()).toBe(true);
      const second = await locks.acquire(name, { waitMs: 5_000 });
      expect(second.fencingToken! > first.fencingToken!).toBe(true);
      expect(await second.release()).toBe(true);
    }, 30_000);
  });
}
