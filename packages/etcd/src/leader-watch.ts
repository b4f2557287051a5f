import { backoffDelayMs, withRequestTimeout } from '@fencelock/core/adapter';
import type { IWatchResponse } from 'etcd3';

/** The part of an etcd3 `Watcher` a leader watch uses. */
export interface RangeWatcher {
  on(event: 'data', handler: (response: IWatchResponse) => void): unknown;
  on(event: 'connected', handler: (response: IWatchResponse) => void): unknown;
  on(event: 'error', handler: (error: Error) => void): unknown;
  once(event: 'connected', handler: (response: IWatchResponse) => void): unknown;
  once(event: 'error', handler: (error: Error) => void): unknown;
  cancel(): Promise<void>;
}

// Re-arms after etcd cancelled the watch (a compaction, a refusal), each after a growing pause. The
// count starts again whenever a watch is confirmed; the observation's end stops it in any case.
const MAX_REARMS = 1_000;
const REARM_RETRY = { initialDelayMs: 50, maxDelayMs: 2_000, factor: 2 };

/**
 * Tells an observer of an election whenever its leader may have changed: one watch on every key of
 * the election's range (a candidacy put, a value proclaimed, a resignation, an expiry), until
 * `signal` aborts. Resolves once etcd confirmed the watch (rejects after `confirmMs`, or when etcd
 * refuses it), so that a read made after it misses no change.
 *
 * etcd3 resumes the watch by itself after a broken connection; `onChange` is called then too, since
 * the leader may have changed while the stream was down. When etcd cancels the watch, `onChange` is
 * called and a new watch is opened (the read it triggers covers what happened in between).
 *
 * @returns a function that stops the watch at once (as the signal does), for the backend's close.
 */
export async function watchElectionRange(
  open: () => RangeWatcher,
  onChange: () => void,
  signal: AbortSignal,
  confirmMs: number,
): Promise<() => void> {
  let current: RangeWatcher | undefined;
  let rearm: NodeJS.Timeout | undefined;
  let failures = 0;
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    clearTimeout(rearm);
    const watcher = current;
    current = undefined;
    // Never awaited: ending an observation must not wait for etcd to confirm the cancellation.
    if (watcher !== undefined) void watcher.cancel().catch(() => undefined);
  };
  const arm = (): RangeWatcher => {
    const watcher = open();
    current = watcher;
    let confirmed = false;
    watcher.on('data', () => {
      if (current === watcher) onChange();
    });
    watcher.on('connected', () => {
      // A second confirmation is etcd3 resuming the watch on a new stream: changes may have been missed.
      if (confirmed && current === watcher) onChange();
      confirmed = true;
      failures = 0;
    });
    watcher.on('error', () => {
      if (current !== watcher || stopped) return;
      // etcd3 has dropped a watch etcd cancelled: nobody can say what changed until the next read.
      current = undefined;
      onChange();
      if (failures >= MAX_REARMS) return;
      failures += 1;
      rearm = setTimeout(() => {
        rearm = undefined;
        if (!stopped) arm();
      }, backoffDelayMs(failures, REARM_RETRY));
      // A watch alone does not keep a process alive.
      rearm.unref();
    });
    return watcher;
  };
  if (signal.aborted) return stop;
  const first = arm();
  const onAbort = (): void => stop();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await withRequestTimeout(
      new Promise<void>((resolve, reject) => {
        first.once('connected', () => resolve());
        first.once('error', reject);
      }),
      confirmMs,
      'etcd watch creation',
    );
  } catch (error) {
    signal.removeEventListener('abort', onAbort);
    stop();
    throw error;
  }
  return stop;
}
