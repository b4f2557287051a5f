/**
 * The protocol twins of `@fencelock/redis` and `@fencelock/redlock`: raw ioredis loops that sends exactly the requests the
 * provider sends on an uncontended acquire + release (its two scripts, by SHA, with the same keys and
 * arguments), with no library around them. Beside the provider it splits the gap to the minimal
 * raw loop in two, in one run: twin ÷ raw is what the protocol costs (a fencing token, the holder
 * record `inspect` reads, the line of waiters, on the wire and in the server), fencelock ÷ twin is
 * what the library adds (validation, the handle with its validity and loss signal, events, retries).
 *
 * The Redlock twin sends the same scripts to every master at once and, as the provider does, goes on
 * once a majority granted (acquire) or deleted (release); the others answer in the background.
 *
 * The arguments are the providers' with their defaults, for a call that may wait (`test/protocol-twin.test.ts`
 * checks them against what the providers send, through `MONITOR`).
 */
import { randomUUID } from 'node:crypto';
import { lengthPrefixed, lineMember, newLineTag, redisLockScripts, scriptSha, splitDirectGrant } from '@fencelock/redis-shared';
import { Redis } from 'ioredis';
// The key naming of both adapters and the Redlock scripts are internal to them: read from their
// source, so that they are the very code the providers run (the bench lives in the same repository).
import { redisLockKeys, type RedisLockKeys } from '../../redis/src/redis-keys.js';
import { redlockKeys, RELEASE_CHANNEL as REDLOCK_CHANNEL } from '../../redlock/src/lock-keys.js';
import { ACQUIRE_LUA as REDLOCK_ACQUIRE_LUA, RELEASE_LUA as REDLOCK_RELEASE_LUA } from '../../redlock/src/redlock-scripts.js';
import type { LockSession, Subject } from './subjects.js';

/** The key prefix the bench's providers lock under (see `subjects.ts`). */
export const BENCH_KEY_PREFIX = 'fencelock-bench:';

// The provider's defaults: how long a waiting attempt stays registered (retry.maxDelayMs + 2 ×
// requestTimeoutMs), how long a fence counter outlives its last grant (7 days), the direct-grant ask
// of a first attempt (`<attempt>:<grant TTL>`), the release channel and the hand-off reservation.
export const REGISTRATION_MS = '4500';
const FENCE_COUNTER_TTL_MS = '604800000';
export const FIRST_ASK = '1:1000';
const RELEASE_CHANNEL = 'fencelock:released';
export const RESERVATION_MS = '1000';

/** The two requests of `@fencelock/redis` as the twins send them, on one client. */
interface RedisTwinRequests {
  /** The provider's side keys of `key`, named once per key. */
  keysOf(key: string): RedisLockKeys;
  /** The acquire script of a call that may wait (it registers in the line, with the first attempt's direct-grant ask). */
  acquire(keys: RedisLockKeys, owner: string): Promise<unknown>;
  /** The release script; with `leave` (the owner's registration), it also takes the owner out of the line. */
  release(keys: RedisLockKeys, owner: string, leave?: string): Promise<unknown>;
}

/**
 * Loads the provider's scripts on `client` once up front, so that every call of a loop is an EVALSHA
 * (the provider's steady state), and sends them with the provider's arguments for `ttlMs` and `lineTag`.
 * Naming the side keys is the library's work (it does it per call): the twins do it once per key,
 * during a loop's warm-up, so that no fencelock code runs in their measured cycles.
 */
async function redisTwinRequests(client: Redis, ttlMs: number, lineTag: string): Promise<RedisTwinRequests> {
  const { acquire, release } = redisLockScripts;
  await client.script('LOAD', acquire.lua);
  await client.script('LOAD', release.lua);
  const acquireSha = scriptSha(acquire.lua);
  const releaseSha = scriptSha(release.lua);
  const ttl = String(ttlMs);
  const named = new Map<string, RedisLockKeys>();
  return {
    keysOf(key) {
      let keys = named.get(key);
      if (keys === undefined) named.set(key, (keys = redisLockKeys(BENCH_KEY_PREFIX, key)));
      return keys;
    },
    acquire: (keys, owner) =>
      client.evalsha(
        acquireSha, 6, keys.lock, keys.fence, keys.meta, keys.waiters, keys.reserved, keys.grants,
        owner, ttl, '1', REGISTRATION_MS, FENCE_COUNTER_TTL_MS, lineTag, FIRST_ASK,
      ),
    release: (keys, owner, leave = '') =>
      client.evalsha(
        releaseSha, 6, keys.lock, keys.waiters, keys.reserved, keys.grants, keys.fence, keys.meta,
        owner, RELEASE_CHANNEL, RESERVATION_MS, FENCE_COUNTER_TTL_MS, leave,
      ),
  };
}

/** A session of the twin: `ttlMs` per lock, `lineTag` as a provider's. */
export async function redisProtocolTwinSession(redisUrl: string, ttlMs: number, lineTag = newLineTag()): Promise<LockSession> {
  const client = new Redis(redisUrl);
  const requests = await redisTwinRequests(client, ttlMs, lineTag);
  return {
    async lock(key) {
      const keys = requests.keysOf(key);
      const owner = randomUUID();
      const token = await requests.acquire(keys, owner);
      if (typeof token !== 'string') throw new Error(`protocol twin: lock ${key} is held`);
      return async () => {
        await requests.release(keys, owner);
      };
    },
    close: async () => client.disconnect(),
  };
}

/**
 * The hand-off twin: the requests `@fencelock/redis` sends under contention, as raw ioredis. An
 * acquire that finds the key held registers in the line with the provider's direct-grant ask; the
 * release grants the lock to the head of the line and announces it on the head's own pub/sub
 * channel, and the waiter holds the lock when it reads that message (the provider's steady state:
 * one script per acquisition and one per release). A waiter that gives up leaves the line with the
 * release script, as the provider does. Beside the provider in the contention part it splits the
 * gap to the fair-lock floor in two: the protocol (scripts and pub/sub) and fencelock's code.
 */
export async function redisHandoffTwinSession(redisUrl: string, ttlMs: number, lineTag = newLineTag()): Promise<LockSession> {
  const client = new Redis(redisUrl);
  const subscriber = new Redis(redisUrl);
  const ownChannel = `${RELEASE_CHANNEL}:${lineTag}`;
  await subscriber.subscribe(ownChannel);
  const requests = await redisTwinRequests(client, ttlMs, lineTag);
  // Grants announced for this session's waiters: resolved when the waiter is there, kept otherwise
  // (the message can come before the reply of the acquire that registered).
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  subscriber.on('message', (_channel: string, message: string) => {
    const grant = splitDirectGrant(message);
    if (grant === undefined) return;
    const wake = waiting.get(grant.ownerId);
    if (wake === undefined) early.add(grant.ownerId);
    else wake();
  });
  return {
    async lock(key, waitMs) {
      const keys = requests.keysOf(key);
      const owner = randomUUID();
      const token = await requests.acquire(keys, owner);
      if (typeof token !== 'string' && !early.delete(owner)) {
        const granted = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), waitMs);
          waiting.set(owner, () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
        waiting.delete(owner);
        if (!granted) {
          // Leave the line, and release a grant that may have come meanwhile, in one call.
          await requests.release(keys, owner, lineMember(owner, lineTag));
          early.delete(owner);
          throw new Error(`hand-off twin: lock ${key} not granted within ${waitMs} ms`);
        }
      }
      return async () => {
        await requests.release(keys, owner);
      };
    },
    close: async () => {
      client.disconnect();
      subscriber.disconnect();
    },
  };
}

/** The hand-off twin as a bench subject (`redis/handoff-twin`): contention only. */
export function redisHandoffTwin(redisUrl: string, ttlMs: number): Subject {
  return {
    id: 'redis/handoff-twin', backend: 'redis', kind: 'raw', label: "raw ioredis sending @fencelock/redis's contended requests (direct grants over pub/sub)", waits: true, contentionOnly: true,
    open: () => redisHandoffTwinSession(redisUrl, ttlMs),
  };
}

/**
 * How long a waiting attempt of `@fencelock/redlock` stays registered by default (retry.maxDelayMs +
 * 2 × requestTimeoutMs), as its twin and the server-cost ladder send it.
 */
export const REDLOCK_REGISTRATION_MS = '600';

/**
 * Resolves true once `quorum` of `replies` are 1, false once that can no longer happen; the rest
 * settle in the background.
 */
function majority(replies: readonly Promise<unknown>[], quorum: number): Promise<boolean> {
  return new Promise((resolve) => {
    let yes = 0;
    let no = 0;
    const count = (reply: unknown): void => {
      if (Number(reply) === 1) yes += 1;
      else no += 1;
      if (yes === quorum) resolve(true);
      else if (no === replies.length - quorum + 1) resolve(false);
    };
    for (const reply of replies) reply.then(count, () => count(0));
  });
}

/** A session of the Redlock twin on `urls`: `ttlMs` per lock. */
export async function redlockProtocolTwinSession(urls: readonly string[], ttlMs: number, lineTag = newLineTag()): Promise<LockSession> {
  const clients = urls.map((url) => new Redis(url));
  for (const client of clients) {
    await client.script('LOAD', REDLOCK_ACQUIRE_LUA);
    await client.script('LOAD', REDLOCK_RELEASE_LUA);
  }
  const acquireSha = scriptSha(REDLOCK_ACQUIRE_LUA);
  const releaseSha = scriptSha(REDLOCK_RELEASE_LUA);
  const quorum = Math.floor(clients.length / 2) + 1;
  const ttl = String(ttlMs);
  // As in the Redis twin: the key names once per key, in the warm-up.
  const named = new Map<string, ReturnType<typeof redlockKeys>>();
  return {
    async lock(key) {
      let keys = named.get(key);
      if (keys === undefined) named.set(key, (keys = redlockKeys(BENCH_KEY_PREFIX, key)));
      const value = randomUUID();
      const granted = await majority(clients.map((client) => client.evalsha(acquireSha, 3, keys.lock, keys.waiters, keys.reserved, value, ttl, REDLOCK_REGISTRATION_MS, lineTag, '')), quorum);
      if (!granted) throw new Error(`Redlock protocol twin: lock ${key} not granted by a majority`);
      const head = lengthPrefixed(value);
      return async () => {
        await majority(clients.map((client) => client.evalsha(releaseSha, 3, keys.lock, keys.waiters, keys.reserved, value, REDLOCK_CHANNEL, head, RESERVATION_MS)), quorum);
      };
    },
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
}

/** The Redlock twin as a bench subject (`redlock/protocol-twin`). */
export function redlockProtocolTwin(urls: readonly string[], ttlMs: number): Subject {
  return {
    id: 'redlock/protocol-twin', backend: 'redlock', kind: 'raw', label: `raw ioredis sending @fencelock/redlock's requests, ${urls.length} masters`, waits: false,
    open: () => redlockProtocolTwinSession(urls, ttlMs),
  };
}

/** The twin as a bench subject (`redis/protocol-twin`). */
export function redisProtocolTwin(redisUrl: string, ttlMs: number): Subject {
  return {
    id: 'redis/protocol-twin', backend: 'redis', kind: 'raw', label: "raw ioredis sending @fencelock/redis's requests (same scripts, keys and arguments)", waits: false,
    open: () => redisProtocolTwinSession(redisUrl, ttlMs),
  };
}
