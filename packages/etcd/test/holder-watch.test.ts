import { within } from '@fencelock/conformance';
import type { IKeyValue, IWatchResponse } from 'etcd3';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { HolderWatch, HolderWatchOpenings, type HolderWatchDeps, type KeyTaken } from '../src/holder-watch.js';

// The holder watch's own logic, on a stand-in for etcd3's watcher: which revisions it asks for, and
// when it must read the key back because the watch cannot vouch for every revision.

const KEY = Buffer.from('fencelock/lock/1a2b');
const CREATED = 10n;

class FakeWatcher extends EventEmitter {
  cancelled = false;
  constructor(readonly fromRevision: bigint) {
    super();
  }
  cancel(): Promise<void> {
    this.cancelled = true;
    return Promise.resolve();
  }
  connected(revision: bigint): void {
    this.emit('connected', response(revision, []));
  }
  changed(revision: bigint, type: 'Put' | 'Delete'): void {
    this.emit('data', response(revision, [{ type, kv: keyValue(revision) }]));
  }
}

function keyValue(modRevision: bigint): IKeyValue {
  return { key: KEY, create_revision: CREATED.toString(), mod_revision: modRevision.toString(), version: '1', value: Buffer.alloc(0), lease: '0' };
}

function response(revision: bigint, events: { type: 'Put' | 'Delete'; kv: IKeyValue }[]): IWatchResponse {
  return { header: { revision: revision.toString() }, events } as unknown as IWatchResponse;
}

interface Read {
  resolve(value: { kv: IKeyValue | undefined; revision: bigint }): void;
  reject(error: Error): void;
}

/** A holder watch on fakes; `reads` holds the pending reads, `log` what it reported, in order. */
function watched(delayMs = 0) {
  const watchers: FakeWatcher[] = [];
  const reads: Read[] = [];
  const log: string[] = [];
  let readArrived: (() => void) | undefined;
  const deps: HolderWatchDeps = {
    watch: (_key, fromRevision) => {
      const watcher = new FakeWatcher(fromRevision);
      watchers.push(watcher);
      return watcher;
    },
    read: () =>
      new Promise((resolve, reject) => {
        reads.push({ resolve, reject });
        readArrived?.();
      }),
    alive: () => true,
  };
  const watch = new HolderWatch(
    KEY,
    CREATED,
    deps,
    {
      taken: (how: KeyTaken) => log.push(`taken ${how}`),
      uncertain: () => log.push('uncertain'),
      recovered: () => log.push('recovered'),
    },
    delayMs > 0 ? new HolderWatchOpenings(delayMs) : undefined,
  );
  // Resolves once `count` reads were asked for (a read after a failed one waits for a backoff).
  const readsAsked = (count: number): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (reads.length >= count) resolve();
      };
      readArrived = check;
      check();
    });
  return { watch, watchers, reads, log, readsAsked };
}

// Lets the promise continuations queued by a settled read run.
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('HolderWatch', () => {
  it('watches the key from the revision right after its creation', () => {
    const { watchers } = watched();
    expect(watchers.map((w) => w.fromRevision)).toEqual([CREATED + 1n]);
  });

  it('a delete of the key is a deletion, a put an overwrite; then it stops and cancels the watch', () => {
    const deleted = watched();
    deleted.watchers[0]!.connected(CREATED);
    deleted.watchers[0]!.changed(12n, 'Delete');
    deleted.watchers[0]!.changed(13n, 'Put');
    expect(deleted.log).toEqual(['taken deleted']);
    expect(deleted.watchers[0]!.cancelled).toBe(true);

    const overwritten = watched();
    overwritten.watchers[0]!.changed(12n, 'Put');
    expect(overwritten.log).toEqual(['taken overwritten']);
  });

  it('stopped, it reports nothing more and cancels its watch; stopped before a delayed open, it never opens one', () => {
    const { watch, watchers, log } = watched();
    watch.stop();
    watchers[0]!.changed(12n, 'Delete');
    expect(log).toEqual([]);
    expect(watchers[0]!.cancelled).toBe(true);

    const delayed = watched(60_000);
    delayed.watch.stop();
    expect(delayed.watchers).toEqual([]);
  });

  it('the stream broke while etcd was still replaying the revisions since the creation: the key is read back', async () => {
    const { watchers, reads, log } = watched();
    const watcher = watchers[0]!;
    // Created at 15: etcd replays 11..15 after confirming, and etcd3 would resume from 16.
    watcher.connected(15n);
    watcher.emit('disconnected', new Error('stream reset'));
    watcher.connected(20n);
    expect(reads).toHaveLength(1);
    reads[0]!.resolve({ kv: undefined, revision: 20n });
    await settle();
    expect(log).toEqual(['taken deleted']);
  });

  it('no read back when nothing was left to replay: the watch was current at creation, or a response came since', () => {
    const current = watched();
    current.watchers[0]!.connected(CREATED);
    current.watchers[0]!.emit('disconnected', new Error('stream reset'));
    current.watchers[0]!.connected(20n);
    expect(current.reads).toHaveLength(0);

    const replayed = watched();
    replayed.watchers[0]!.connected(15n);
    replayed.watchers[0]!.emit('data', response(15n, []));
    replayed.watchers[0]!.emit('disconnected', new Error('stream reset'));
    replayed.watchers[0]!.connected(20n);
    expect(replayed.reads).toHaveLength(0);
    expect(replayed.log).toEqual([]);
  });

  it('etcd cancels the watch (a compaction): uncertain, read back, then recovered and watched again from the read', async () => {
    const { watchers, reads, log } = watched();
    watchers[0]!.emit('error', new Error('Watcher canceled: mvcc: required revision has been compacted'));
    expect(log).toEqual(['uncertain']);
    expect(reads).toHaveLength(1);
    reads[0]!.resolve({ kv: keyValue(CREATED), revision: 30n });
    await settle();
    expect(log).toEqual(['uncertain', 'recovered']);
    expect(watchers.map((w) => w.fromRevision)).toEqual([CREATED + 1n, 31n]);
    watchers[1]!.changed(32n, 'Delete');
    expect(log).toEqual(['uncertain', 'recovered', 'taken deleted']);
  });

  it('a read that fails is tried again; one that finds the key written since is an overwrite', async () => {
    const { watchers, reads, log, readsAsked } = watched();
    watchers[0]!.emit('error', new Error('Watcher canceled'));
    reads[0]!.reject(new Error('etcd unreachable'));
    await within(readsAsked(2), 5_000, 'the read after the failed one');
    reads[1]!.resolve({ kv: keyValue(25n), revision: 30n });
    await settle();
    expect(log).toEqual(['uncertain', 'taken overwritten']);
    expect(watchers).toHaveLength(1);
  });
});
