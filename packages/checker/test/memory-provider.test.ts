import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MemoryLockProvider } from '@fencelock/core';
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, createFencedStoreClient, createHistoryWriter, createLockRecorder, readHistoryFile, startFencedStore } from '../src/index.js';

const directory = mkdtempSync(join(tmpdir(), 'fencelock-memory-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('a history recorded from MemoryLockProvider through the fenced store', () => {
  it('passes the checker, and a stale holder is refused by the store', async () => {
    const path = join(directory, 'history.jsonl');
    const writer = createHistoryWriter({ path, run: 'memory' });
    const provider = new MemoryLockProvider();
    const store = await startFencedStore();
    const client = createFencedStoreClient(store.url);
    const key = `orders:${process.pid}`;
    const recorders = new Map(['stale', 'p1', 'p2', 'p3'].map((proc) => [proc, createLockRecorder({ proc, sink: (event) => writer.record(event) })]));
    const recorder = (proc: string): ReturnType<typeof createLockRecorder> => {
      const found = recorders.get(proc);
      if (found === undefined) throw new Error(`no recorder for ${proc}`);
      return found;
    };
    // One provider stands for all the clients here, so its signals are recorded once, as "stale"'s
    // (the only holder that loses its lock); each real client process watches its own provider.
    const unwatch = recorder('stale').watch(provider);
    try {
      // A holder that stops renewing: its lease runs out, it is told so, and its later write (around
      // the library, with its old token) must be refused because a newer holder wrote first.
      const stale = await recorder('stale').acquire(provider, key, { ttlMs: 40, autoExtend: false });
      if (stale === undefined) throw new Error('the first acquire failed');
      await new Promise<void>((resolve) => {
        stale.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      expect(await recorder('stale').write(stale, client, 'refused by the library')).toBe(false);

      const worker = async (proc: string): Promise<void> => {
        for (let round = 0; round < 4; round += 1) {
          // A TTL far above event-loop stalls on a loaded machine, so no holder but "stale" ever expires.
          const handle = await recorder(proc).acquire(provider, key, { ttlMs: 1_000, waitMs: 5_000 });
          if (handle === undefined) throw new Error(`${proc} could not acquire`);
          expect(await recorder(proc).write(handle, client, `${proc}:${round}`)).toBe(true);
          // Hold one lock past a third of its TTL, so that an automatic renewal is recorded.
          if (proc === 'p1' && round === 0) await sleep(400);
          expect(await recorder(proc).release(handle)).toBe(true);
        }
      };
      await Promise.all([worker('p1'), worker('p2'), worker('p3')]);

      const staleWrite = await client.write({ key, token: stale.fencingToken ?? 0n, proc: 'stale', value: 'late' });
      expect(staleWrite.accepted).toBe(false);
    } finally {
      unwatch();
      writer.close();
      await provider.close();
      await store.close();
    }

    const events = readHistoryFile(path);
    // The loss-signal bound is the checker's L1 timing check; this case checks the recorded history, so
    // it gives event-loop lag on a loaded machine plenty of room instead of a tight wall-clock bound.
    const result = checkHistory(events, {
      fencedWrites: store.log,
      finalReads: { [key]: store.values(key) },
      lossSignalBoundMs: 5_000,
    });
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({ acquisitions: 13, fencedWrites: 13, fenceRejections: 1, lostByReason: { expired: 1 } });
    expect(result.stats.maxLossSignalLatencyMs).toEqual(expect.any(Number));
    expect(events.filter((event) => event.f === 'extend' && event.type === 'ok').length).toBeGreaterThan(0);
    expect(events.filter((event) => event.f === 'write' && event.type === 'fail' && event.err === 'LOCK_LOST')).toHaveLength(1);
  });

  it('records refused input as fail and a timed-out wait as indeterminate', async () => {
    const events: unknown[] = [];
    const recorder = createLockRecorder({ proc: 'p1', sink: (event) => events.push(event), now: () => 42 });
    const provider = new MemoryLockProvider();
    const key = `busy:${process.pid}`;
    try {
      expect(await recorder.acquire(provider, '', { waitMs: 0 })).toBeUndefined();
      const holder = await provider.acquire(key);
      expect(await recorder.acquire(provider, key, { waitMs: 0 })).toBeUndefined();
      await holder.release();
    } finally {
      await provider.close();
    }
    expect(events).toEqual([
      expect.objectContaining({ f: 'acquire', type: 'invoke', key: '', tc: 42, proc: 'p1' }),
      expect.objectContaining({ f: 'acquire', type: 'fail', err: 'LOCK_INVALID_ARGUMENT' }),
      expect.objectContaining({ f: 'acquire', type: 'invoke', key }),
      expect.objectContaining({ f: 'acquire', type: 'info', err: 'LOCK_TIMEOUT' }),
    ]);
  });
});
