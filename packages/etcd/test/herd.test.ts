/**
 * No herd effect: each waiter watches only the deletion of the key just before its own, so a release
 * wakes exactly one waiter whatever the number of waiters. Counted at the clients, as the watch
 * events etcd delivers to each of them (a herd would deliver one event per remaining waiter). Waiters
 * of one process queue in core and only the head of that line has a waiter key in etcd.
 */
import { randomUUID } from 'node:crypto';
import { isPending, nextEvent, within } from '@fencelock/conformance';
import type { LockHandle } from '@fencelock/core';
import type { Etcd3 } from 'etcd3';
import { expect, it } from 'vitest';
import { type EtcdLockProvider, lockName } from '../src/index.js';
import { type OwnClientProvider, ownClientProviders } from './own-client.js';

const ownClientProvider = ownClientProviders('fencelock-herd/');

/** A provider on a client of its own whose delivered watch `delete` events are counted. */
function countingProvider(): OwnClientProvider & { deletions: () => number } {
  let count = 0;
  const countDeletions = (client: Etcd3): void => {
    const watch = client.watch.bind(client);
    client.watch = () => {
      const builder = watch();
      const watcher = builder.watcher.bind(builder);
      builder.watcher = () => watcher().on('delete', () => (count += 1));
      return builder;
    };
  };
  return { ...ownClientProvider(10_000, countDeletions), deletions: () => count };
}

/** Queues one acquire per entry of `waiters` on `key`, in that order; each releases once granted. */
async function queueInOrder(key: string, waiters: readonly EtcdLockProvider[]): Promise<{ order: number[]; done: Promise<void[]> }> {
  const order: number[] = [];
  const done: Promise<void>[] = [];
  for (const [index, waiter] of waiters.entries()) {
    const queued = nextEvent(waiter, 'contended', (event) => event.key === key, 10_000);
    done.push(
      waiter.acquire(key, { waitMs: 60_000 }).then(async (lock: LockHandle) => {
        order.push(index);
        await lock.release();
      }),
    );
    await queued;
  }
  return { order, done: Promise.all(done) };
}

it('with 10 waiters on 10 clients, each release delivers one watch event, to the next waiter only', async () => {
  const key = `herd:${randomUUID()}`;
  const holder = countingProvider();
  const waiters = Array.from({ length: 10 }, () => countingProvider());
  const lock = await holder.provider.acquire(key);
  const { order, done } = await queueInOrder(
    key,
    waiters.map((w) => w.provider),
  );
  expect(waiters.map((w) => w.deletions())).toEqual(waiters.map(() => 0));
  await lock.release();
  await within(done, 60_000, 'every waiter to acquire and release');
  expect(order).toEqual(waiters.map((_, index) => index));
  expect(holder.deletions()).toBe(0);
  expect(waiters.map((w) => w.deletions())).toEqual(waiters.map(() => 1));
});

it('with 40 waiters in one process, one waiter key waits in etcd, and the 40 hand-offs deliver at most one watch event each', async () => {
  const key = `herd:${randomUUID()}`;
  const holder = countingProvider();
  const waiting = countingProvider();
  const lock = await holder.provider.acquire(key);
  const { order, done } = await queueInOrder(
    key,
    Array.from({ length: 40 }, () => waiting.provider),
  );
  // The holder's key and the head waiter's (read on the waiting client, whose member applied its put).
  const keys = await waiting.client.getAll().prefix(`${lockName(key, 'fencelock-herd/', 'escape')}/`).keys();
  expect(keys).toHaveLength(2);
  await lock.release();
  await within(done, 60_000, 'every waiter to acquire and release');
  expect(order).toEqual(Array.from({ length: 40 }, (_, index) => index));
  expect(holder.deletions()).toBe(0);
  // The head is woken by the holder's release; a later head is granted at once when the previous
  // holder's delete landed before its put, else it watches that one key only.
  expect(waiting.deletions()).toBeGreaterThanOrEqual(1);
  expect(waiting.deletions()).toBeLessThanOrEqual(40);
});

it('with a semaphore of 2 and 6 waiters on 6 clients, each release delivers one watch event, to the waiter it lets in only', async () => {
  // A semaphore waiter watches only the nearest keys whose permits keep it out (here the 2 keys just
  // before its own): a release wakes the waiter it lets in, not every waiter behind it.
  const limit = 2;
  const key = `herd-semaphore:${randomUUID()}`;
  const holders = [countingProvider(), countingProvider()];
  const waiters = Array.from({ length: 6 }, () => countingProvider());
  const held = [await holders[0]!.provider.acquireSemaphore(key, { limit }), await holders[1]!.provider.acquireSemaphore(key, { limit })];
  const granted = [];
  for (const waiter of waiters) {
    const queued = nextEvent(waiter.provider, 'contended', (event) => event.key === key, 10_000);
    granted.push(waiter.provider.acquireSemaphore(key, { limit, waitMs: 60_000 }));
    await queued;
  }
  expect(waiters.map((w) => w.deletions())).toEqual(waiters.map(() => 0));
  // Oldest first: each release lets the next waiter in, and the one after it still waits.
  for (const [index, next] of granted.entries()) {
    expect(await held.shift()!.release()).toBe(true);
    held.push(await within(next, 10_000, `waiter ${index} to be let in`));
    if (index + 1 < granted.length) expect(await isPending(granted[index + 1]!)).toBe(true);
  }
  await Promise.all(held.map((handle) => handle.release()));
  expect(holders.map((h) => h.deletions())).toEqual([0, 0]);
  expect(waiters.map((w) => w.deletions())).toEqual(waiters.map(() => 1));
});
