/**
 * CREATE2 through node-zookeeper-client's connection (`src/create-with-stat.ts`), against a real
 * server: the reply's stat is the created node's (its czxid as another client reads it), a chroot is
 * taken off the returned path as the client's own create does, an error reply is a plain ZooKeeper
 * error that leaves the connection usable, replies stay matched to their requests when CREATE2s and
 * other requests are pipelined, and a client whose internals differ gets no CREATE2 at all.
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import { ACL, type Client, CreateMode, Exception, Id, Permission, type Stat } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CreateWithStat, createWithStatOn } from '../src/create-with-stat.js';
import { rawClient } from './znodes.js';

const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
const ROOT = `/fencelock-create2-${randomUUID()}`;
const OPEN = [new ACL(Permission.ALL, new Id('world', 'anyone'))];
const clients: Client[] = [];
let client: Client;

beforeAll(async () => {
  client = await rawClient(server);
  clients.push(client);
  await new Promise<void>((resolve, reject) => client.mkdirp(ROOT, (error) => (error ? reject(error) : resolve())));
});

afterAll(async () => {
  // Every node made here is a child of ROOT (the ephemeral ones go with their sessions).
  const children = await new Promise<string[]>((resolve) => client.getChildren(ROOT, (error, list) => resolve(error ? [] : list)));
  for (const path of [...children.map((child) => `${ROOT}/${child}`), ROOT]) await new Promise<void>((resolve) => client.remove(path, -1, () => resolve()));
  for (const each of clients) each.close();
});

function create2(on: Client, path: string, data?: Buffer, mode: number = CreateMode.PERSISTENT): Promise<{ path: string; stat: Stat | undefined }> {
  const send: CreateWithStat | undefined = createWithStatOn(on);
  if (send === undefined) throw new Error('this client cannot send CREATE2');
  return new Promise((resolve, reject) => send(path, data, OPEN, mode, (error, created, stat) => (error ? reject(error) : resolve({ path: created, stat }))));
}

function exists(on: Client, path: string): Promise<Stat> {
  return new Promise((resolve, reject) => on.exists(path, (error, stat) => (error || !stat ? reject(error ?? new Error(`no ${path}`)) : resolve(stat))));
}

function dataOf(on: Client, path: string): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => on.getData(path, (error, data) => (error ? reject(error) : resolve(data))));
}

const czxid = (stat: Stat | undefined): bigint | undefined => stat?.czxid.readBigInt64BE(0);

describe('createWithStatOn', () => {
  it("answers the created node's path and stat: its czxid, data length and ephemeral owner as another client reads them", async () => {
    const { path, stat } = await create2(client, `${ROOT}/node-`, Buffer.from('hello'), CreateMode.EPHEMERAL_SEQUENTIAL);
    expect(path).toMatch(new RegExp(`^${ROOT}/node-\\d{10}$`));
    const other = await rawClient(server);
    clients.push(other);
    const seen = await exists(other, path);
    expect(czxid(stat)).toBe(czxid(seen));
    expect(stat?.dataLength).toBe(5);
    expect(stat?.ephemeralOwner.equals(seen.ephemeralOwner)).toBe(true);
    expect((await dataOf(other, path))?.toString()).toBe('hello');
  });

  it('takes the chroot off the returned path, as the client’s own create does', async () => {
    const chrooted = await rawClient(`${server}${ROOT}`);
    clients.push(chrooted);
    const { path, stat } = await create2(chrooted, '/chrooted-');
    expect(path).toBe('/chrooted-');
    expect(czxid(stat)).toBe(czxid(await exists(client, `${ROOT}/chrooted-`)));
  });

  it('an error reply is a ZooKeeper error, and the connection goes on answering in order', async () => {
    const missing = create2(client, `${ROOT}/no-such-parent/child`);
    const taken = create2(client, ROOT);
    const after = create2(client, `${ROOT}/after-errors`);
    await expect(missing).rejects.toBeInstanceOf(Exception);
    await expect(missing).rejects.toMatchObject({ code: Exception.NO_NODE });
    await expect(taken).rejects.toMatchObject({ code: Exception.NODE_EXISTS });
    expect((await after).path).toBe(`${ROOT}/after-errors`);
  });

  it('pipelined with other requests in one turn, every reply reaches its own request', async () => {
    const paths = Array.from({ length: 5 }, (_, index) => `${ROOT}/pipelined-${index}`);
    const created = paths.map((path) => create2(client, path, Buffer.from(path)));
    const reads = paths.map((path) => exists(client, path));
    const answers = await Promise.all(created);
    const stats = await Promise.all(reads);
    expect(answers.map((answer) => answer.path)).toEqual(paths);
    expect(answers.map((answer) => czxid(answer.stat))).toEqual(stats.map((stat) => czxid(stat)));
    // Each create is its own transaction: five different, increasing zxids.
    const zxids = answers.map((answer) => czxid(answer.stat) ?? 0n);
    expect([...zxids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(zxids);
    expect(new Set(zxids).size).toBe(5);
  });

  it('a client whose internals it does not know gets no CREATE2 (the caller falls back to a create)', () => {
    expect(createWithStatOn({} as Client)).toBeUndefined();
    expect(createWithStatOn({ connectionManager: {} } as unknown as Client)).toBeUndefined();
  });
});
