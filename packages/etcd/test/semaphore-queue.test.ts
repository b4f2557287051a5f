import type { IKeyValue } from 'etcd3';
import { describe, expect, it } from 'vitest';
import { lockName } from '../src/index.js';
import { semaphoreName } from '../src/key-encoding.js';
import { decodeSemaphoreValue, encodeSemaphoreValue } from '../src/lock-value.js';
import { semaphoreHolders, semaphoreTurn } from '../src/semaphore-queue.js';

let revision = 100;
/** A contender key as etcd returns it: ours (limit, permits) or another tool's (a raw value). */
function contender(what: { limit: number; permits: number } | string): IKeyValue {
  revision += 1;
  const value = typeof what === 'string' ? Buffer.from(what) : encodeSemaphoreValue({ ownerId: `o${revision}`, ...what, metadata: undefined });
  const kv = { key: Buffer.from(`s/${revision}`), value, create_revision: String(revision), mod_revision: String(revision), version: '1', lease: '1' };
  return kv as unknown as IKeyValue;
}
const names = (kvs: readonly IKeyValue[]): string[] => kvs.map((kv) => kv.key.toString());

describe('semaphore turn', () => {
  it('grants when the permits of every earlier contender plus its own fit, waiting ones included (no overtaking)', () => {
    const holder = contender({ limit: 3, permits: 1 });
    const bigWaiter = contender({ limit: 3, permits: 3 });
    expect(semaphoreTurn([holder], 3, 2)).toEqual({ kind: 'granted' });
    // 2 permits are free, but the earlier request for 3 still waits: 1 + 3 + 1 > 3.
    expect(semaphoreTurn([bigWaiter, holder], 3, 1)).toMatchObject({ kind: 'blocked' });
    expect(semaphoreTurn([], 3, 3)).toEqual({ kind: 'granted' });
  });

  it('watches only the nearest earlier keys whose permits alone keep it out', () => {
    const older = [1, 2, 3, 4, 5].map(() => contender({ limit: 2, permits: 1 })).reverse();
    // Newest first: with a limit of 2 and 1 permit, the 2 keys just before ours.
    const turn = semaphoreTurn(older, 2, 1);
    expect(turn.kind === 'blocked' && names(turn.window)).toEqual(names(older.slice(0, 2)));
    // Asking for 2 of 4: the nearest keys summing to more than 2 (here 2 + 1).
    const mixed = [contender({ limit: 4, permits: 1 }), contender({ limit: 4, permits: 2 }), contender({ limit: 4, permits: 1 })].reverse();
    const wide = semaphoreTurn(mixed, 4, 2);
    expect(wide.kind === 'blocked' && names(wide.window)).toEqual(names(mixed.slice(0, 2)));
    // With a limit of 1 it is the mutex: the key just before ours.
    const mutex = semaphoreTurn([contender({ limit: 1, permits: 1 }), contender({ limit: 1, permits: 1 })], 1, 1);
    expect(mutex.kind === 'blocked' && mutex.window).toHaveLength(1);
  });

  it("counts another tool's key as every permit", () => {
    const foreign = contender('');
    expect(semaphoreTurn([foreign], 5, 1)).toEqual({ kind: 'blocked', window: [foreign] });
  });

  it('refuses when any earlier contender agreed to another limit, reporting the oldest one that did', () => {
    const holder = contender({ limit: 2, permits: 1 });
    const stray = contender({ limit: 3, permits: 1 });
    expect(semaphoreTurn([stray, holder], 1, 1)).toEqual({ kind: 'mismatch', limit: 2 });
    // Even a waiter of another limit: it may be the one that holds next.
    expect(semaphoreTurn([stray, holder], 2, 1)).toEqual({ kind: 'mismatch', limit: 3 });
  });

  it('shows as holders the longest run from the oldest whose permits fit, with the oldest limit', () => {
    const kvs = [contender({ limit: 3, permits: 2 }), contender({ limit: 3, permits: 1 }), contender({ limit: 3, permits: 1 })];
    const { limit, holders } = semaphoreHolders(kvs);
    expect(limit).toBe(3);
    expect(holders.map((holder) => [holder.kv.key.toString(), holder.permits])).toEqual([
      [kvs[0]!.key.toString(), 2],
      [kvs[1]!.key.toString(), 1],
    ]);
  });
});

describe('semaphore keys and values', () => {
  it('lives apart from every lock of the same key, whatever the encoding', () => {
    for (const key of ['a', 'a/b', '\u0000fencelock-semaphore', 'fencelock-semaphore']) {
      const semaphore = `${semaphoreName(key, 'fencelock/')}/`;
      expect(semaphore).toBe(`fencelock/\u0000fencelock-semaphore/${key.replaceAll('/', '%2F').replaceAll('\u0000', '%00')}/`);
      const lock = `${lockName(key, 'fencelock/', 'escape')}/`;
      expect(semaphore.startsWith(lock) || lock.startsWith(semaphore)).toBe(false);
    }
    expect(() => lockName('\u0000fencelock-semaphore/a', 'fencelock/', 'as-is')).toThrow(RangeError);
  });

  it('reads back what it wrote, and no other value as ours', () => {
    const value = { ownerId: 'o', limit: 4, permits: 2, metadata: 'm' };
    expect(decodeSemaphoreValue(encodeSemaphoreValue(value))).toEqual(value);
    for (const raw of ['', 'x', '{}', '{"fencelock":1,"owner":"o","mode":"exclusive"}', '{"fencelock":1,"owner":"o","mode":"semaphore","limit":1,"permits":2}']) {
      expect(decodeSemaphoreValue(Buffer.from(raw)), raw).toBeUndefined();
    }
  });
});
