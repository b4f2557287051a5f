/**
 * The fallback when the client cannot send CREATE2 (its internals are not what
 * `src/wire-requests.ts` knows; simulated here by that module answering `undefined`): the acquire
 * creates with a plain CREATE and reads our node with a watch, pipelined with the listing. The token
 * is still our node's czxid, and a delete behind the holder's back is still noticed.
 */
import { randomUUID } from 'node:crypto';
import { abortedWithin } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import type { Client, Stat } from 'node-zookeeper-client';
import { afterAll, expect, it, vi } from 'vitest';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { deleteHolders, rawClient } from './znodes.js';

vi.mock('../src/wire-requests.js', () => ({ wireRequestsOn: () => undefined }));

const ROOT = '/fencelock-no-create2';
const clients: Client[] = [];
afterAll(() => {
  for (const client of clients) client.close();
});

it('acquires with CREATE + a watching read: the token is our node’s czxid, and a delete behind our back is a loss', async () => {
  const client = await rawClient(topology().zkConnectionString);
  clients.push(client);
  const sent: number[] = [];
  const manager = (client as unknown as { connectionManager: { queue: (request: { header: { type: number } | null }, callback: unknown) => void } })
    .connectionManager;
  const queue = manager.queue.bind(manager);
  manager.queue = (request, callback) => {
    if (request.header !== null) sent.push(request.header.type);
    queue(request, callback);
  };
  const locks = createZooKeeperLockProvider({ client, root: ROOT });
  const key = `no-create2:${randomUUID()}`;
  try {
    await (await locks.acquire(key)).release();
    sent.length = 0;
    const lock = await locks.acquire(key);
    // CREATE (1), GET_CHILDREN2 (12), GET_DATA (4); no CREATE2 (15). A keepalive (EXISTS, 3) may slip in.
    expect(sent.filter((type) => type !== 3)).toEqual([1, 12, 4]);
    const lockPath = `${ROOT}/${encodeKeySegment(key)}`;
    const own = (await new Promise<string[]>((resolve, reject) => client.getChildren(lockPath, (error, list) => (error ? reject(error) : resolve(list))))).find(
      (child) => child.includes(lock.ownerId),
    );
    const stat = await new Promise<Stat>((resolve, reject) => client.exists(`${lockPath}/${own}`, (error, found) => (error || !found ? reject(error) : resolve(found))));
    expect(lock.fencingToken).toBe(stat.czxid.readBigInt64BE(0));
    await deleteHolders(client, ROOT, key);
    const reason = await abortedWithin(lock.signal, 2_000, 'the loss signal after the holder node was deleted');
    expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'taken-over' });
  } finally {
    await locks.close();
  }
});
