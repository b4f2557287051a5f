/**
 * The requests the adapter encodes itself and queues on node-zookeeper-client's connection
 * (`src/wire-requests.ts`). Their bytes are the client's own encoding of the same request (CREATE2:
 * a CREATE's record under opcode 15), with and without a chroot. Against a real server: CREATE2's
 * reply stat is the created node's (its czxid as another client reads it), a chroot is taken off the
 * returned path as the client's own create does, an error reply is a plain ZooKeeper error that
 * leaves the connection usable, replies stay matched to their requests when pipelined with the
 * client's own, a listing's watcher is told of the next change, a delete honours the version,
 * and a client whose internals differ gets none of them.
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import { ACL, type Client, CreateMode, Exception, Id, Permission, type Stat } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { type WireRequests, wireRequestsOn } from '../src/wire-requests.js';
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

function wireOf(on: Client): WireRequests {
  const wire = wireRequestsOn(on);
  if (wire === undefined) throw new Error('this client cannot take the adapter’s requests');
  return wire;
}

function create2(on: Client, path: string, data?: Buffer, mode: number = CreateMode.PERSISTENT): Promise<{ path: string; stat: Stat | undefined }> {
  return new Promise((resolve, reject) => wireOf(on).create2(path, data, OPEN, mode, (error, created, stat) => (error ? reject(error) : resolve({ path: created, stat }))));
}

function children(on: Client, path: string, watcher?: (event: unknown) => void): Promise<string[] | undefined> {
  return new Promise((resolve, reject) => wireOf(on).getChildren(path, watcher, (error, list) => (error ? reject(error) : resolve(list))));
}

function remove(on: Client, path: string, version = -1): Promise<void> {
  return new Promise((resolve, reject) => wireOf(on).remove(path, version, (error) => (error ? reject(error) : resolve())));
}

function exists(on: Client, path: string): Promise<Stat> {
  return new Promise((resolve, reject) => on.exists(path, (error, stat) => (error || !stat ? reject(error ?? new Error(`no ${path}`)) : resolve(stat))));
}

function dataOf(on: Client, path: string): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => on.getData(path, (error, data) => (error ? reject(error) : resolve(data))));
}

const czxid = (stat: Stat | undefined): bigint | undefined => stat?.czxid.readBigInt64BE(0);

describe('wireRequestsOn: CREATE2', () => {
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

  it('a client whose internals it does not know gets none of the requests (the caller falls back to the client’s methods)', () => {
    expect(wireRequestsOn({} as Client)).toBeUndefined();
    expect(wireRequestsOn({ connectionManager: {} } as unknown as Client)).toBeUndefined();
    expect(wireRequestsOn({ connectionManager: { queue: () => undefined } } as unknown as Client)).toBeUndefined();
  });
});

describe('wireRequestsOn: GET_CHILDREN2 and DELETE', () => {
  it('lists children; with a watcher, its watch fires once, on the next change', async () => {
    const parent = `${ROOT}/listed-${randomUUID()}`;
    await create2(client, parent);
    await create2(client, `${parent}/a`);
    const watcher = await rawClient(server);
    clients.push(watcher);
    expect(await children(watcher, parent)).toEqual(['a']);
    const fired: unknown[] = [];
    let notified: (event: unknown) => void = () => undefined;
    const notification = new Promise<unknown>((resolve) => (notified = resolve));
    expect(
      await children(watcher, parent, (event) => {
        fired.push(event);
        notified(event);
      }),
    ).toEqual(['a']);
    await create2(client, `${parent}/b`);
    let timer: NodeJS.Timeout | undefined;
    const event = await Promise.race([
      notification,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no child watch within 5 s of a create under the listed node')), 5_000))),
    ]).finally(() => clearTimeout(timer));
    expect(String(event)).toContain('NODE_CHILDREN_CHANGED');
    // A listing answered after the change: the notification came once by then. (The watch flag's byte is checked below.)
    expect((await children(watcher, parent))?.sort()).toEqual(['a', 'b']);
    expect(fired).toHaveLength(1);
  });

  it('deletes at any version or at the given one; a wrong version and a missing node are ZooKeeper errors', async () => {
    const path = `${ROOT}/deleted-${randomUUID()}`;
    await create2(client, path);
    await expect(remove(client, path, 7)).rejects.toMatchObject({ code: Exception.BAD_VERSION });
    await remove(client, path, 0);
    await expect(remove(client, path)).rejects.toMatchObject({ code: Exception.NO_NODE });
    const again = `${ROOT}/deleted-any-${randomUUID()}`;
    await create2(client, again);
    await remove(client, again);
    await expect(exists(client, again)).rejects.toBeDefined();
  });

  it('names paths under a chroot as the client does (`/` is the chroot itself)', async () => {
    const chroot = `${ROOT}/chroot-${randomUUID()}`;
    await create2(client, chroot);
    const chrooted = await rawClient(`${server}${chroot}`);
    clients.push(chrooted);
    await create2(chrooted, '/inside');
    expect(await children(chrooted, '/')).toEqual(['inside']);
    expect(await children(client, chroot)).toEqual(['inside']);
    await remove(chrooted, '/inside');
    expect(await children(client, chroot)).toEqual([]);
  });
});

/** The client's jute records, to encode the same requests its own way. */
interface JuteRecord {
  [field: string]: unknown;
  setChrootPath(path: string): void;
}
interface Jute {
  readonly protocol: Record<string, new () => JuteRecord>;
  readonly data: Record<string, new (...args: unknown[]) => JuteRecord>;
  readonly Request: new (header: JuteRecord, payload: JuteRecord) => { toBuffer(): Buffer };
}
const jute = createRequire(import.meta.url)('node-zookeeper-client/lib/jute/index.js') as Jute;

/** The adapter's request for `send`, as queued on a stand-in connection (chroot `chroot`), written with xid 42. */
function adapterBytes(send: (wire: WireRequests) => void, chroot?: string): Buffer {
  const queued: { header: { xid: number }; payload: JuteRecord; toBuffer(): Buffer }[] = [];
  const manager = { chrootPath: chroot, queue: (request: (typeof queued)[number]) => queued.push(request), registerChildWatcher: () => undefined };
  const wire = wireRequestsOn({ connectionManager: manager } as unknown as Client);
  if (wire === undefined) throw new Error('the stand-in connection was not taken');
  send(wire);
  const [request] = queued;
  if (request === undefined) throw new Error('nothing was queued');
  // What the ConnectionManager does: the chroot on queueing, the xid before writing.
  if (chroot !== undefined) request.payload.setChrootPath(chroot);
  request.header.xid = 42;
  return request.toBuffer();
}

/** The client's own bytes for a request of `opcode` with body record `payload`, xid 42. */
function clientBytes(opcode: number, payload: JuteRecord, chroot?: string): Buffer {
  const header = new jute.protocol.RequestHeader!();
  header['xid'] = 42;
  header['type'] = opcode;
  if (chroot !== undefined) payload.setChrootPath(chroot);
  return new jute.Request(header, payload).toBuffer();
}

describe('wireRequestsOn: bytes', () => {
  const ACLS = [...OPEN, new ACL(Permission.READ | Permission.WRITE, new Id('digest', 'user:hash=ü'))];

  for (const chroot of [undefined, '/some/chroot']) {
    it(`writes each request as the client's own encoding does${chroot === undefined ? '' : ', under a chroot'}`, () => {
      for (const data of [undefined, Buffer.alloc(0), Buffer.from('metadata ✓')]) {
        const create = new jute.protocol.CreateRequest!();
        Object.assign(create, { path: '/a/b-', data, acl: ACLS.map((entry) => (entry as unknown as { toRecord(): unknown }).toRecord()), flags: CreateMode.EPHEMERAL_SEQUENTIAL });
        expect(adapterBytes((wire) => wire.create2('/a/b-', data, ACLS, CreateMode.EPHEMERAL_SEQUENTIAL, () => undefined), chroot)).toEqual(clientBytes(15, create, chroot));
      }
      for (const watch of [false, true]) {
        const list = new jute.protocol.GetChildren2Request!();
        Object.assign(list, { path: '/lock/é', watch });
        expect(adapterBytes((wire) => wire.getChildren('/lock/é', watch ? () => undefined : undefined, () => undefined), chroot)).toEqual(clientBytes(12, list, chroot));
      }
      for (const version of [-1, 0, 2_147_483_647]) {
        const deletion = new jute.protocol.DeleteRequest!();
        Object.assign(deletion, { path: '/', version });
        expect(adapterBytes((wire) => wire.remove('/', version, () => undefined), chroot)).toEqual(clientBytes(2, deletion, chroot));
      }
    });
  }

  it('a CREATE2 says so in its header until it is written, then asks for its reply to be parsed as GET_DATA’s', () => {
    const queued: { header: { type: number }; toBuffer(): Buffer }[] = [];
    const manager = { queue: (request: (typeof queued)[number]) => queued.push(request), registerChildWatcher: () => undefined };
    wireRequestsOn({ connectionManager: manager } as unknown as Client)?.create2('/x', undefined, OPEN, CreateMode.PERSISTENT, () => undefined);
    expect(queued[0]?.header.type).toBe(15);
    queued[0]?.toBuffer();
    expect(queued[0]?.header.type).toBe(4);
  });
});
