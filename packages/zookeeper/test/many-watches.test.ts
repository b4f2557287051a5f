/**
 * Every held lock watches its own node, so a session holding many locks holds many watches, and
 * node-zookeeper-client re-registers them all at reconnection. In one request, past the server's
 * jute.maxbuffer (1 MB), the server drops the connection at every attempt until the session expires;
 * the session sends them in parts of at most 128 KB, as the Java client does.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { abortedWithin, nextEvent, within } from '@fencelock/conformance';
import { type TcpProxy, startTcpProxy, topology } from '@fencelock/test-infra';
import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createZooKeeperLockProvider } from '../src/index.js';
import { splitSetWatches } from '../src/set-watches.js';
import { deleteHolders, rawClient } from './znodes.js';

const ROOT = '/fencelock-many-watches';
const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
let proxy: TcpProxy | undefined;
let raw: Client | undefined;

beforeAll(async () => {
  proxy = await startTcpProxy({ targetPort: Number(server.slice(server.lastIndexOf(':') + 1)) });
  raw = await rawClient(server);
});

afterAll(async () => {
  proxy?.setMode('pass');
  raw?.close();
  await proxy?.close();
});

interface JuteClasses {
  readonly Request: new (header: unknown, payload: unknown) => { header: { xid: number; type: number }; payload: Record<string, unknown> };
  readonly protocol: {
    readonly RequestHeader: new (xid: number, type: number) => { xid: number; type: number };
    readonly SetWatches: new (relativeZxid: Buffer, data: string[], exist: string[], child: string[]) => Record<string, unknown>;
  };
}

describe('splitSetWatches', () => {
  const jute = createRequire(import.meta.url)('node-zookeeper-client/lib/jute/index.js') as JuteClasses;
  const zxid = Buffer.from([0, 0, 0, 1, 0, 0, 0, 2]);
  const paths = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `/${prefix}/${'x'.repeat(100)}/${index}`);

  it('leaves a small request alone', () => {
    const request = new jute.Request(new jute.protocol.RequestHeader(-8, 101), new jute.protocol.SetWatches(zxid, paths('d', 3), [], []));
    expect(splitSetWatches(request)).toEqual([request]);
  });

  it('splits a large one into parts of at most the bound, keeping every path, its kind, the order and the zxid', () => {
    const data = paths('d', 2_000);
    const exist = paths('e', 1_500);
    const child = paths('c', 10);
    const request = new jute.Request(new jute.protocol.RequestHeader(-8, 101), new jute.protocol.SetWatches(zxid, data, exist, child));
    const parts = splitSetWatches(request, 64 * 1024);
    expect(parts.length).toBeGreaterThan(1);
    const joined = { dataWatches: [] as string[], existWatches: [] as string[], childWatches: [] as string[] };
    const headers = new Set<unknown>();
    for (const part of parts) {
      expect(part).toBeInstanceOf(jute.Request);
      expect(part.header).toMatchObject({ type: 101 });
      headers.add(part.header);
      const payload = part.payload as { relativeZxid: Buffer } & Record<keyof typeof joined, string[]>;
      expect(payload.relativeZxid).toEqual(zxid);
      const size = (Object.keys(joined) as (keyof typeof joined)[]).reduce(
        (sum, kind) => sum + payload[kind].reduce((bytes, path) => bytes + 4 + Buffer.byteLength(path), 0),
        0,
      );
      expect(size).toBeLessThanOrEqual(64 * 1024);
      for (const kind of Object.keys(joined) as (keyof typeof joined)[]) joined[kind].push(...payload[kind]);
    }
    // The client numbers each request in its header: one header per part.
    expect(headers.size).toBe(parts.length);
    expect(joined).toEqual({ dataWatches: data, existWatches: exist, childWatches: child });
  });

  it('leaves every other request alone', () => {
    const request = new jute.Request(new jute.protocol.RequestHeader(5, 4), new jute.protocol.SetWatches(zxid, paths('d', 5_000), [], []));
    expect(splitSetWatches(request, 1_024)).toEqual([request]);
  });
});

it('a session whose watches pass 1 MB stays connected through a reconnection, and its held lock still hears a delete', async () => {
  const client = await rawClient(`127.0.0.1:${proxy!.port}`, { sessionTimeout: 10_000, spinDelay: 50, retries: 0 });
  const locks = createZooKeeperLockProvider({ client, root: ROOT });
  const key = `many-watches:${randomUUID()}`;
  try {
    const lock = await locks.acquire(key);
    // Existence watches on paths that do not exist: 6,000 × 220 bytes, past jute.maxbuffer, no node made.
    const base = `${ROOT}/absent-${randomUUID()}-${'p'.repeat(160)}`;
    await within(
      Promise.all(
        Array.from(
          { length: 6_000 },
          (_, index) =>
            new Promise<void>((resolve, reject) =>
              client.exists(`${base}/${index}`, () => undefined, (error) => (error ? reject(error) : resolve())),
            ),
        ),
      ),
      30_000,
      '6,000 existence watches',
    );
    const uncertain = nextEvent(locks, 'uncertain', (event) => event.ownerId === lock.ownerId, 10_000);
    proxy!.setMode('reset');
    await uncertain;
    const recovered = nextEvent(locks, 'recovered', (event) => event.ownerId === lock.ownerId, 10_000);
    proxy!.setMode('pass');
    await recovered;
    // The connection carries requests after the watches were restored (a refused SetWatches drops it).
    const info = await within(locks.inspect(key), 10_000, 'an inspect after the reconnection');
    expect(info?.holders.map((holder) => holder.ownerId)).toEqual([lock.ownerId]);
    await deleteHolders(raw!, ROOT, key);
    const reason = await abortedWithin(lock.signal, 5_000, 'the loss signal after the reconnection');
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
  } finally {
    proxy!.setMode('pass');
    await locks.close();
    client.close();
  }
}, 60_000);
