/**
 * The fair-lock floor (`src/subjects-fair-floor.ts`) is only a fair figure to compare with if it is a
 * lock that serves waiters first: one holder at a time, a waiter served by the release (not by
 * asking again) with the next fencing token, an owner-checked release, and a waiter that gives up leaving the line.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { sharedAddresses } from '../src/bench-servers.js';
import { redisFairFloorSession } from '../src/subjects-fair-floor.js';
import type { LockSession } from '../src/subjects.js';

const url = sharedAddresses().redisUrl;
const redis = new Redis(url);
const sessions: LockSession[] = [];
const open = async (): Promise<LockSession> => {
  const session = await redisFairFloorSession(url, 10_000);
  sessions.push(session);
  return session;
};

afterAll(async () => {
  await Promise.all(sessions.map((session) => session.close()));
  redis.disconnect();
});

/** Settles to 'pending' when `promise` has not settled once the server answered a round trip. */
async function state(promise: Promise<unknown>): Promise<'settled' | 'pending'> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await redis.ping();
  return settled ? 'settled' : 'pending';
}

describe('the fair-lock floor', () => {
  it('grants the head of the line the lock by the release, with the next token; a waiter that gives up leaves the line', async () => {
    const key = `fair-floor-test:${randomUUID()}`;
    const [a, b, c] = [await open(), await open(), await open()];
    const releaseA = await a.lock(key, 5_000);
    expect(await redis.get(`${key}:fair:token`)).toBe('1');
    const waiting = b.lock(key, 5_000);
    // B is in line (its request was made), and does not hold the lock while A does.
    await expect.poll(() => redis.llen(`${key}:fair:line`), { timeout: 5_000 }).toBe(1);
    expect(await state(waiting)).toBe('pending');
    await releaseA();
    const releaseB = await waiting;
    // The release handed the lock to B with the next token: B never asked again.
    expect(await redis.get(`${key}:fair:token`)).toBe('2');
    expect(await redis.llen(`${key}:fair:line`)).toBe(0);
    // The lock is handed on, never freed, while someone waits: C gets it from B's release.
    const waitingC = c.lock(key, 5_000);
    await expect.poll(() => redis.llen(`${key}:fair:line`), { timeout: 5_000 }).toBe(1);
    await releaseB();
    const releaseC = await waitingC;
    expect(await redis.get(`${key}:fair:token`)).toBe('3');
    await expect(a.lock(key, 50)).rejects.toThrow(/not granted within 50 ms/);
    // The waiter that gave up left the line, so C's release frees the key.
    expect(await redis.llen(`${key}:fair:line`)).toBe(0);
    await releaseC();
    expect(await redis.exists(`${key}:fair`)).toBe(0);
    await redis.del(`${key}:fair:token`);
  });

  it('releases only its own lock', async () => {
    const key = `fair-floor-test:${randomUUID()}`;
    const session = await open();
    const release = await session.lock(key, 1_000);
    await redis.set(`${key}:fair`, 'someone else', 'PX', 10_000);
    await release();
    expect(await redis.get(`${key}:fair`)).toBe('someone else');
    await redis.del(`${key}:fair`, `${key}:fair:token`);
  });
});
