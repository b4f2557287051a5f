import { within } from '@fencelock/conformance';
import type { IWatchResponse } from 'etcd3';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { watchElectionRange } from '../src/leader-watch.js';

// The election watch's own logic, on a stand-in for etcd3's watcher: when it tells the observer to
// read again, and when it opens a new watch. The real watch runs in the conformance and interop suites.

class FakeWatcher extends EventEmitter {
  cancelled = false;
  cancel(): Promise<void> {
    this.cancelled = true;
    return Promise.resolve();
  }
  connected(): void {
    this.emit('connected', { header: { revision: '7' }, events: [] } as unknown as IWatchResponse);
  }
  changed(): void {
    this.emit('data', { header: { revision: '8' }, events: [{ type: 'Put' }] } as unknown as IWatchResponse);
  }
}

function fakes() {
  const watchers: FakeWatcher[] = [];
  let opened: (() => void) | undefined;
  let changes = 0;
  return {
    watchers,
    open: (): FakeWatcher => {
      const watcher = new FakeWatcher();
      watchers.push(watcher);
      opened?.();
      return watcher;
    },
    onChange: (): void => {
      changes += 1;
    },
    get changes() {
      return changes;
    },
    /** Resolves once the `count`-th watch is opened. */
    openedCount: (count: number): Promise<void> =>
      within(
        new Promise<void>((resolve) => {
          const check = (): void => {
            if (watchers.length >= count) resolve();
          };
          opened = check;
          check();
        }),
        5_000,
        `watch ${count} to be opened`,
      ),
  };
}

describe('election watch', () => {
  it('resolves once etcd confirmed the watch, and reports each change and each resumption after a broken stream', async () => {
    const f = fakes();
    const controller = new AbortController();
    const watching = watchElectionRange(f.open, f.onChange, controller.signal, 5_000);
    let settled = false;
    void watching.then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    f.watchers[0]!.connected();
    await within(watching, 1_000, 'the watch to be in place');
    // The first confirmation is the watch being set up: the caller reads after it anyway.
    expect(f.changes).toBe(0);
    f.watchers[0]!.changed();
    expect(f.changes).toBe(1);
    // etcd3 resumed the watch on a new stream: a change may have been missed meanwhile.
    f.watchers[0]!.connected();
    expect(f.changes).toBe(2);
    controller.abort();
    expect(f.watchers[0]!.cancelled).toBe(true);
    f.watchers[0]!.changed();
    expect(f.changes).toBe(2);
  });

  it('opens a new watch when etcd cancels the one in place, telling the observer to read again', async () => {
    const f = fakes();
    const controller = new AbortController();
    const watching = watchElectionRange(f.open, f.onChange, controller.signal, 5_000);
    f.watchers[0]!.connected();
    await watching;
    f.watchers[0]!.emit('error', new Error('Watcher canceled: compacted'));
    expect(f.changes).toBe(1);
    await f.openedCount(2);
    f.watchers[1]!.changed();
    expect(f.changes).toBe(2);
    // Events of the dropped watch no longer count.
    f.watchers[0]!.changed();
    expect(f.changes).toBe(2);
    controller.abort();
    expect(f.watchers[1]!.cancelled).toBe(true);
  });

  it('rejects when etcd refuses the watch, or does not confirm it in time (then cancels it)', async () => {
    const refused = fakes();
    const watching = watchElectionRange(refused.open, refused.onChange, new AbortController().signal, 5_000);
    refused.watchers[0]!.emit('error', new Error('Watcher canceled: permission denied'));
    // etcd3 has already dropped a watch etcd cancelled: there is nothing to cancel.
    await expect(watching).rejects.toThrow('permission denied');
    const silent = fakes();
    await expect(watchElectionRange(silent.open, silent.onChange, new AbortController().signal, 20)).rejects.toThrow();
    expect(silent.watchers).toHaveLength(1);
    expect(silent.watchers[0]!.cancelled).toBe(true);
  });
});
