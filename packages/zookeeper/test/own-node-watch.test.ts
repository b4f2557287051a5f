/**
 * The watch on a held lock's own node, against a scripted session (no server): the orders of events
 * a real server rarely produces on cue. A notification that comes between the watching read and the
 * grant is not lost; a write re-arms the watch; a re-arming read that fails is sent again at the
 * next connection; a stopped watch hears nothing.
 */
import { Event, Exception, type Stat } from 'node-zookeeper-client';
import { describe, expect, it } from 'vitest';
import { NodeWatches } from '../src/node-watches.js';
import { OwnNodeWatch } from '../src/own-node-watch.js';
import type { ZooKeeperSession } from '../src/zookeeper-session.js';

const PATH = '/fencelock-unit/key/_c_00000000-0000-0000-0000-000000000000-lock-0000000007';

function statWith(czxid: bigint): Stat {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(czxid);
  return { czxid: bytes } as unknown as Stat;
}

type Answer = { stat: Stat } | { error: Exception | Error };

/** A session whose getData answers come from `answers`, in order, at once; `connect()` plays a reconnection. */
function scriptedSession(answers: Answer[]): { session: ZooKeeperSession; reads: () => number; connect: () => void; watches: NodeWatches } {
  const watches = new NodeWatches();
  const connected = new Set<() => void>();
  let reads = 0;
  const client = {
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
  };
}

// node-zookeeper-client makes its errors with Exception.create, which its typings leave out.
const zooKeeperError = (code: number): Exception => (Exception as unknown as { create(code: number): Exception }).create(code);
const notify = (watches: NodeWatches, type: number): void => watches.watcher(new Event(type, 'event', PATH));
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
