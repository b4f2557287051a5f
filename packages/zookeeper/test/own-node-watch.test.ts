/**
 * The watch on a held lock's own node, against a scripted session (no server): the orders of events
 * a real server rarely produces on cue. A notification that comes between the watching read and the
 * grant is not lost; a write re-arms the watch; a re-arming read that fails is sent again at the
 * next connection; a stopped watch hears nothing; the child watch a listing left on the lock znode
 * stands in for the watch on our node until it fires, and then hands over to our node with one read.
 */
import { Event, Exception, type Stat } from 'node-zookeeper-client';
import { describe, expect, it } from 'vitest';
import { NodeWatches } from '../src/node-watches.js';
import { OwnNodeWatch } from '../src/own-node-watch.js';
import type { ZooKeeperSession } from '../src/zookeeper-session.js';

const PARENT = '/fencelock-unit/key';
const PATH = `${PARENT}/_c_00000000-0000-0000-0000-000000000000-lock-0000000007`;

function statWith(czxid: bigint): Stat {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(czxid);
  return { czxid: bytes } as unknown as Stat;
}

type Answer = { stat: Stat } | { error: Exception | Error };

/** A session whose getData answers come from `answers`, in order, at once; `connect()` plays a reconnection. */
function scriptedSession(
  answers: Answer[],
  { deferListing = false } = {},
): { session: ZooKeeperSession; reads: () => number; connect: () => void; watches: NodeWatches; answerListing: () => void } {
  const watches = new NodeWatches();
  const connected = new Set<() => void>();
  let reads = 0;
  let answerListing = (): void => undefined;
  const client = {
    getChildren(path: string, watcher: unknown, callback: (error: null, children: string[]) => void) {
      expect(path).toBe(PARENT);
      expect(watcher).toBe(watches.watcher);
      answerListing = () => callback(null, [PATH.slice(PARENT.length + 1)]);
      if (!deferListing) answerListing();
    },
    getData(path: string, watcher: unknown, callback: (error: Error | Exception | null, data: Buffer | undefined, stat: Stat | undefined) => void) {
      expect(path).toBe(PATH);
      expect(watcher).toBe(watches.watcher);
      reads += 1;
      const answer = answers.shift();
      if (answer === undefined) throw new Error('no scripted answer left');
      if ('stat' in answer) callback(null, Buffer.alloc(0), answer.stat);
      else callback(answer.error, undefined, undefined);
    },
  };
  const session = {
    client,
    watches,
    alive: true,
    listChildren(path: string, watcher: unknown, callback: (error: null, children: string[]) => void): void {
      client.getChildren(path, watcher, callback);
    },
    request<T>(_what: string, run: (done: (error: Error | Exception | null, value: T) => void) => void): Promise<T> {
      return new Promise((resolve, reject) => run((error, value) => (error === null ? resolve(value) : reject(error))));
    },
    onConnected(listener: () => void): () => void {
      connected.add(listener);
      return () => connected.delete(listener);
    },
  };
  return {
    session: session as unknown as ZooKeeperSession,
    reads: () => reads,
    connect: () => {
      for (const listener of [...connected]) listener();
    },
    watches,
    answerListing: () => answerListing(),
  };
}

// node-zookeeper-client makes its errors with Exception.create, which its typings leave out.
const zooKeeperError = (code: number): Exception => (Exception as unknown as { create(code: number): Exception }).create(code);
const notify = (watches: NodeWatches, type: number, path = PATH): void => watches.watcher(new Event(type, 'event', path));
// Lets the promise reactions of an answered read run.
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('OwnNodeWatch', () => {
  it('a delete notified between the watching read and the grant is reported at the grant', async () => {
    const { session, watches } = scriptedSession([{ stat: statWith(42n) }]);
    const watch = new OwnNodeWatch(session, PATH);
    expect(await watch.read()).toEqual(statWith(42n));
    notify(watches, Event.NODE_DELETED);
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    expect(gone).toBe(1);
  });

  it('a read that finds no node answers null', async () => {
    const { session } = scriptedSession([{ error: zooKeeperError(Exception.NO_NODE) }]);
    expect(await new OwnNodeWatch(session, PATH).read()).toBeNull();
  });

  it('a write re-arms the watch with one read; the lock stays held while the node is ours, and is gone when it is not', async () => {
    const { session, watches, reads } = scriptedSession([{ stat: statWith(42n) }, { stat: statWith(42n) }, { stat: statWith(43n) }]);
    const watch = new OwnNodeWatch(session, PATH);
    await watch.read();
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    notify(watches, Event.NODE_DATA_CHANGED);
    await settle();
    expect(reads()).toBe(2);
    expect(gone).toBe(0);
    // Deleted and made again with the same name by someone else while we were away: another czxid.
    notify(watches, Event.NODE_DATA_CHANGED);
    await settle();
    expect(reads()).toBe(3);
    expect(gone).toBe(1);
  });

  it('a re-arming read that fails is sent again at the next connection', async () => {
    const { session, watches, reads, connect } = scriptedSession([
      { stat: statWith(42n) },
      { error: zooKeeperError(Exception.CONNECTION_LOSS) },
      { error: zooKeeperError(Exception.NO_NODE) },
    ]);
    const watch = new OwnNodeWatch(session, PATH);
    await watch.read();
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    notify(watches, Event.NODE_DATA_CHANGED);
    await settle();
    expect(reads()).toBe(2);
    expect(gone).toBe(0);
    connect();
    await settle();
    expect(reads()).toBe(3);
    expect(gone).toBe(1);
    // Once gone, further connections send nothing.
    connect();
    await settle();
    expect(reads()).toBe(3);
  });

  it("the listing's watch on the lock znode: a contender coming moves it to our node with one read, and our node's delete is then the loss", async () => {
    const { session, watches, reads } = scriptedSession([{ stat: statWith(42n) }]);
    const watch = new OwnNodeWatch(session);
    expect(await watch.listChildren(PARENT)).toEqual([PATH.slice(PARENT.length + 1)]);
    watch.placed(PATH);
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    // Held on the listing's watch: no read of its own.
    expect(reads()).toBe(0);
    notify(watches, Event.NODE_CHILDREN_CHANGED, PARENT);
    await settle();
    expect(reads()).toBe(1);
    expect(gone).toBe(0);
    // Subscribed to our node now, not to the lock znode.
    notify(watches, Event.NODE_CHILDREN_CHANGED, PARENT);
    await settle();
    expect(reads()).toBe(1);
    notify(watches, Event.NODE_DELETED);
    expect(gone).toBe(1);
  });

  it('a notification of the lock znode between the listing and the grant reads our node at the grant', async () => {
    const { session, watches, reads } = scriptedSession([{ error: zooKeeperError(Exception.NO_NODE) }]);
    const watch = new OwnNodeWatch(session);
    await watch.listChildren(PARENT);
    watch.placed(PATH);
    notify(watches, Event.NODE_CHILDREN_CHANGED, PARENT);
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    await settle();
    expect(reads()).toBe(1);
    expect(gone).toBe(1);
  });

  it("a notification of the lock znode before the listing's answer is moot: the listing shows that change and its watch still counts", async () => {
    const { session, watches, reads, answerListing } = scriptedSession([{ stat: statWith(42n) }], { deferListing: true });
    const watch = new OwnNodeWatch(session);
    const listed = watch.listChildren(PARENT);
    // Another acquisition's watch of this session, fired by a change the listing will show.
    notify(watches, Event.NODE_CHILDREN_CHANGED, PARENT);
    answerListing();
    await listed;
    watch.placed(PATH);
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    await settle();
    expect(reads()).toBe(0);
    // Still subscribed to the lock znode: the next change is heard, and our node is read.
    notify(watches, Event.NODE_CHILDREN_CHANGED, PARENT);
    await settle();
    expect(reads()).toBe(1);
    expect(gone).toBe(0);
  });

  it("only our own node's delete is a loss without a read: the lock znode's is checked", async () => {
    const { session, watches, reads } = scriptedSession([{ stat: statWith(42n) }]);
    const watch = new OwnNodeWatch(session);
    await watch.listChildren(PARENT);
    watch.placed(PATH);
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    notify(watches, Event.NODE_DELETED, PARENT);
    await settle();
    expect(reads()).toBe(1);
    expect(gone).toBe(0);
  });

  it('a stopped watch hears nothing and leaves no subscription', async () => {
    const { session, watches, reads } = scriptedSession([{ stat: statWith(42n) }]);
    const watch = new OwnNodeWatch(session, PATH);
    await watch.read();
    let gone = 0;
    watch.hold(42n, () => (gone += 1));
    watch.stop();
    notify(watches, Event.NODE_DELETED);
    notify(watches, Event.NODE_DATA_CHANGED);
    await settle();
    expect(gone).toBe(0);
    expect(reads()).toBe(1);
    // Another waiter on the path (a writer queued behind this reader in the same session) is still woken.
    let woken = 0;
    watches.subscribe(PATH, () => (woken += 1));
    notify(watches, Event.NODE_DELETED);
    expect(woken).toBe(1);
  });
});
