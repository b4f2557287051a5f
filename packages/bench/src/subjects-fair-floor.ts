/**
 * The least a lock that serves waiters first can do on one Redis, as raw ioredis: a TTL, an owner
 * check and a fencing token, and a release that grants the lock to the head of the line. Beside the
 * bare FIFO floor (a token in a list, no lock at all) it shows what those guarantees cost a hand-off
 * between processes before any library code runs, so that the contention figures of fencelock and
 * of the barging peers can be read against what fairness itself costs.
 *
 * What it leaves out, and fencelock does not: a waiter that dies in line is granted the lock and
 * holds it back for a whole TTL (no registration that lapses, no short first grant); tokens start at
 * 1 and go back to 1 when the counter is lost (no time floor); there is no holder record, and a
 * waiter that times out leaves by a separate call. Single Redis only (the grant list is not a key
 * of the script's).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { LockSession, Subject } from './subjects.js';

// KEYS: lock, counter, line. ARGV: owner, TTL ms. A free lock is taken with the next token; a held
// one puts the caller at the end of the line. The release hands the lock on, so it is never free
// while someone waits, and a newcomer cannot barge.
const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return false`;

// KEYS: lock, counter, line. ARGV: owner, TTL ms, grant list prefix. Only the owner releases; the
// head of the line gets the lock, the next token on its own list, which its BLPOP is waiting on.
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local head = redis.call('LPOP', KEYS[3])
if not head then redis.call('DEL', KEYS[1]) return 1 end
redis.call('SET', KEYS[1], head, 'PX', ARGV[2])
local granted = ARGV[3] .. head
redis.call('RPUSH', granted, redis.call('INCR', KEYS[2]))
redis.call('PEXPIRE', granted, ARGV[2])
return 1`;

// KEYS: lock, line. ARGV: owner. A waiter that gives up leaves the line, and lets go of a grant that
// came in the meantime (the next waiter is then served by expiry: a floor need not do better).
const LEAVE = `
redis.call('LREM', KEYS[2], 0, ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

interface FairFloorClient extends Redis {
  fairAcquire(lock: string, counter: string, line: string, owner: string, ttlMs: number): Promise<number | null>;
  fairRelease(lock: string, counter: string, line: string, owner: string, ttlMs: number, grants: string): Promise<number>;
  fairLeave(lock: string, line: string, owner: string): Promise<number>;
}

/** A session: one connection for the scripts, one for the blocking wait on its grants. */
export async function redisFairFloorSession(redisUrl: string, ttlMs: number): Promise<LockSession> {
  const client = new Redis(redisUrl) as FairFloorClient;
  const blocking = new Redis(redisUrl);
  client.defineCommand('fairAcquire', { numberOfKeys: 3, lua: ACQUIRE });
  client.defineCommand('fairRelease', { numberOfKeys: 3, lua: RELEASE });
  client.defineCommand('fairLeave', { numberOfKeys: 2, lua: LEAVE });
  return {
    async lock(key, waitMs) {
      const lock = `${key}:fair`;
      const counter = `${lock}:token`;
      const line = `${lock}:line`;
      const grants = `${lock}:granted:`;
      const owner = randomUUID();
      const token = await client.fairAcquire(lock, counter, line, owner, ttlMs);
      if (token === null) {
        // BLPOP's timeout is in seconds (fractions allowed since Redis 6).
        const granted = await blocking.blpop(`${grants}${owner}`, Math.max(0.001, waitMs / 1000));
        if (granted === null) {
          await client.fairLeave(lock, line, owner);
          throw new Error(`raw fair lock ${key}: not granted within ${waitMs} ms`);
        }
      }
      return async () => {
        await client.fairRelease(lock, counter, line, owner, ttlMs, grants);
      };
    },
    close: async () => {
      client.disconnect();
      blocking.disconnect();
    },
  };
}

/** The subject (`redis/fair-floor`): contention only, beside the FIFO floor. */
export function redisFairFloor(redisUrl: string, ttlMs: number): Subject {
  return {
    id: 'redis/fair-floor',
    backend: 'redis',
    kind: 'raw',
    label: 'raw ioredis fair lock: TTL, owner check, fencing token, release grants the head (BLPOP)',
    waits: true,
    contentionOnly: true,
    open: () => redisFairFloorSession(redisUrl, ttlMs),
  };
}
