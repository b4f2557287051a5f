/**
 * Hand-off on the shared masters: the line of waiters (a released lock goes to a client that was
 * already waiting, not to the releaser coming straight back), release announcements (a waiter is
 * woken by the release, not by its next poll) and leaving the line when a waiter gives up.
 */
import { nextEvent, within } from '@fencelock/conformance';
import { isLockError } from '@fencelock/core';
import { redisCommand } from '@fencelock/test-infra';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseAnnouncement } from '../src/redlock-scripts.js';
import { sharedMasters } from './helpers.js';

const { ports, open } = sharedMasters();

// Polls so rare that only a release announcement can wake the waiter within the test's bounds.
const NO_POLLING = { initialDelayMs: 60_000, maxDelayMs: 60_000 };

describe('hand-off to a waiting client', () => {
  it('a released lock goes to the client already waiting, not to the releaser asking again at once', async () => {
    const releaser = open();
    const waiter = open();
    const key = `line:${randomUUID()}`;
    const held = await releaser.acquire(key, { ttlMs: 10_000 });
    const waiting = waiter.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
    await nextEvent(waiter, 'contended', (e) => e.key === key, 5_000);
    expect(await held.release()).toBe(true);
    // The key is free on every master, but the waiter is in line there: the newcomer is held back.
    expect(await releaser.tryAcquire(key, { ttlMs: 10_000 })).toBeUndefined();
    const next = await within(waiting, 10_000, "the waiter's grant");
    expect(await next.release()).toBe(true);
  });

  it('a waiter is woken by the release announcement, not by its next poll', async () => {
    const holder = open();
    const waiter = open({ retry: NO_POLLING });
    // A first wait opens the waiter's subscriptions, and it tries again once one is confirmed: get
    // that behind us on another key, so that below nothing but an announcement can wake it.
    const warmKey = `announce-warm:${randomUUID()}`;
    const warm = await holder.acquire(warmKey, { ttlMs: 10_000 });
    const warmWaiting = waiter.acquire(warmKey, { ttlMs: 10_000, waitMs: 50_000 });
    await nextEvent(waiter, 'contended', (e) => e.key === warmKey, 5_000);
    await warm.release();
    await (await within(warmWaiting, 10_000, 'the first grant')).release();
    const key = `announce:${randomUUID()}`;
    const held = await holder.acquire(key, { ttlMs: 10_000 });
    const waiting = waiter.acquire(key, { ttlMs: 10_000, waitMs: 50_000 });
    await nextEvent(waiter, 'contended', (e) => e.key === key, 5_000);
    await held.release();
    // The waiter's next poll is 30–60 s away: only the announcement can wake it within 10 s.
    const next = await within(waiting, 10_000, 'the waiter woken by the release');
    expect(next.key).toBe(key);
    await next.release();
  });

  it('a waiter that gives up leaves the line, so a free lock is not held back for it', async () => {
    const holder = open();
    const quitter = open();
    const key = `quit:${randomUUID()}`;
    const held = await holder.acquire(key, { ttlMs: 10_000 });
    const error = await quitter.acquire(key, { ttlMs: 10_000, waitMs: 200 }).catch((e: unknown) => e);
    expect(isLockError(error, 'LOCK_TIMEOUT')).toBe(true);
    for (const port of ports) expect(await redisCommand(port, ['ZCARD', `{w}fencelock:redlock-waiters:${key}`])).toBe(0);
    await held.release();
    const again = await holder.tryAcquire(key, { ttlMs: 10_000 });
    expect(again).toBeDefined();
    await again?.release();
  });

  it('a lock key shaped like a side key is refused before any request', async () => {
    const provider = open();
    const error = await provider.tryAcquire(`{w}fencelock:redlock-waiters:${randomUUID()}`).catch((e: unknown) => e);
    expect(isLockError(error, 'LOCK_INVALID_ARGUMENT')).toBe(true);
  });
});

describe('release announcements', () => {
  it('name the release and the lock key, whatever bytes the key holds', () => {
    const key = 'ключ:1:{x}\u0000🔒';
    const id = randomUUID();
    expect(parseAnnouncement(`${id.length}:${id}${key}`)).toEqual({ releaseId: id, lockKey: key });
    expect(parseAnnouncement('garbage')).toBeUndefined();
    expect(parseAnnouncement('99:short')).toBeUndefined();
  });
});
