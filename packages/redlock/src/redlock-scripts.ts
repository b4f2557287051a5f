import { EFFECTS_REPLICATION_LUA, HANDOFF_RESERVATION_MS, ScriptRunner, headOfLineLua, isNoScriptError, lengthPrefixed, scriptSha, splitLengthPrefixed, type LockClient, type ScriptArgument } from '@fencelock/redis-shared';
import type { RedlockKeys } from './lock-keys.js';
import type { VoteSink } from './master-node.js';

// Both scripts take the lock key, its waiter registry and its hand-off reservation.
const KEY_COUNT = 3;

/**
 * Acquire on one master: `SET lock value NX PX ttl`, plus a line of waiters.
 *
 * KEYS[1] = the lock key, KEYS[2] = the key's waiter registry (a sorted set of lock values scored by
 * the server time, in ms to the microsecond, until which each registration lasts), KEYS[3] = its hand-off reservation
 * (see {@link RELEASE_LUA}). ARGV[1] = the lock value, ARGV[2] = TTL in ms, ARGV[3] = how long (ms) a
 * refused attempt stays registered (`'0'`: it does not wait, a try-once attempt), optional ARGV[4] =
 * the provider's line tag: the registration is then `<value>|<tag>` (see redis-shared's `line-tag.ts`),
 * optional ARGV[5] = `'1'` for a barging attempt (a provider whose `handoff` is `'barging'`), which
 * neither honours a reservation nor ends one (it lapses by itself).
 *
 * Returns 1 (granted), 0 (the key holds another value) or -2 (the key is free but reserved for the
 * clients already waiting). Guarantees:
 * - The lock itself is a plain `SET NX PX`: other Redlock clients on the same masters (node-redlock,
 *   redis-py) exclude it and are excluded by it; they are not held back by the line (they never see it).
 * - Only while a release's reservation lasts and live registrations exist, a waiting attempt of a
 *   value that is not registered — typically the client that just released, asking again at once —
 *   is refused (and registered in turn), so a waiting client gets the lock next instead of polling
 *   forever behind it. Otherwise a free key is granted: always to a try-once attempt, and to anyone
 *   when no release just reserved it (registrations of waiters that crashed hold nobody back). A
 *   grant ends the reservation.
 * - The key already holding ARGV[1] (a retry whose first reply was lost) is taken over with the new
 *   TTL; lock values are unique per acquisition, so this never makes a lock reentrant.
 * - When nobody waits (no registry key) the script costs one `EXISTS` more than a bare `SET NX`, and
 *   a grant then returns before anything else is read or built.
 */
export const ACQUIRE_LUA = `
${EFFECTS_REPLICATION_LUA}
-- Nobody waits (no registry: the common case): a bare SET NX decides, with no more reads.
local line = redis.call('EXISTS', KEYS[2]) == 1
if not line and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
local register = tonumber(ARGV[3]) or 0
local barging = ARGV[5] == '1'
local member = ARGV[1]
if ARGV[4] and ARGV[4] ~= '' then member = ARGV[1] .. '|' .. ARGV[4] end
local function wait_in_line(reply)
  if register > 0 then
    local now = redis.call('TIME')
    -- Microseconds keep registrations made within one millisecond in the order they were made (the
    -- head of the line is the lowest score); formatted, as Lua's own number format keeps 14 digits.
    redis.call('ZADD', KEYS[2], string.format('%.3f', now[1] * 1000 + now[2] / 1000 + register), member)
    if redis.call('PTTL', KEYS[2]) < register then redis.call('PEXPIRE', KEYS[2], register) end
  end
  return reply
end
if line then
  local now = redis.call('TIME')
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now[1] * 1000 + math.floor(now[2] / 1000))
  if register > 0 and not barging and redis.call('EXISTS', KEYS[3]) == 1 and redis.call('ZCARD', KEYS[2]) > 0
    and redis.call('ZSCORE', KEYS[2], member) == false and redis.call('EXISTS', KEYS[1]) == 0 then
    return wait_in_line(-2)
  end
end
-- Without a line the SET NX above has failed already.
if not line or redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) == false then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return wait_in_line(0) end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if line then
  redis.call('ZREM', KEYS[2], member)
  if not barging then redis.call('DEL', KEYS[3]) end
end
return 1
`;

/**
 * Release on one master: `DEL lock` only if it holds ARGV[1] (the whole value is compared, so another
 * owner's key is never touched). KEYS[1] = the lock key, KEYS[2] = its waiter registry, KEYS[3] = its
 * hand-off reservation; ARGV[1] = the lock value, ARGV[2] = the channel, ARGV[3] = the announcement's
 * head (`''`: no announcement, no reservation), ARGV[4] = how long (ms) the reservation lasts.
 * Returns 1 if it deleted.
 *
 * The announcement goes out only while live registrations exist (lapsed ones are dropped first):
 * `ARGV[3] .. <length>:<head of the line> .. lock key`. ARGV[3] names this release (see
 * {@link announcementHead}), so a client subscribed to several masters can tell the copies of one
 * release from the next release; the head of the line is the value registered longest ago (lengths in
 * bytes, as `lengthPrefixed` writes them), so only the process where that waiter waits sends an
 * attempt at once. A head registered with a line tag is announced on `ARGV[2]:<tag>`, without the
 * tag, so that only its process even receives it. With it, the free key is reserved for the waiters for ARGV[4] ms (see
 * {@link ACQUIRE_LUA}).
 */
export const RELEASE_LUA = `
${EFFECTS_REPLICATION_LUA}
-- pcall: a value of another type (written by something else) is not ours either, and stays.
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[3] == '' or redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
${headOfLineLua('KEYS[2]')}
if head == nil then return 1 end
-- A head registered with a line tag is told on its own channel: only its process wakes.
if head_tag then
  redis.call('PUBLISH', ARGV[2] .. ':' .. head_tag, ARGV[3] .. #head_id .. ':' .. head_id .. KEYS[1])
else
  redis.call('PUBLISH', ARGV[2], ARGV[3] .. #head .. ':' .. head .. KEYS[1])
end
redis.call('SET', KEYS[3], '1', 'PX', ARGV[4])
return 1
`;

/**
 * The Redlock scripts on one client (EVALSHA once the connection has the script; see
 * {@link defineRedlockScripts}). Each call tells its answer to a round's {@link VoteSink}.
 */
export interface RedlockScripts {
  /** See {@link ACQUIRE_LUA}, with {@link acquireArguments}; answers whether this master granted the key (1), not why it refused (0 or -2). */
  acquire(args: readonly ScriptArgument[], sink: VoteSink, index: number): void;
  /** See {@link RELEASE_LUA}, with {@link releaseArguments}; answers whether the key held `value` and was deleted. */
  release(args: readonly ScriptArgument[], sink: VoteSink, index: number): void;
}

/**
 * The acquire script's arguments (see {@link ACQUIRE_LUA}), the same for every master: a round builds
 * them once. The clients copy what they send, so one array serves all the masters' calls.
 */
export function acquireArguments(keys: RedlockKeys, value: string, ttlMs: number, registerMs: number, lineTag: string, barging: boolean): readonly ScriptArgument[] {
  return [KEY_COUNT, keys.lock, keys.waiters, keys.reserved, value, ttlMs, registerMs, lineTag, barging ? '1' : ''];
}

/** The release script's arguments (see {@link RELEASE_LUA} and {@link acquireArguments}). */
export function releaseArguments(keys: RedlockKeys, value: string, channel: string, head: string): readonly ScriptArgument[] {
  return [KEY_COUNT, keys.lock, keys.waiters, keys.reserved, value, channel, head, HANDOFF_RESERVATION_MS];
}

/** The SHAs of the acquire and release scripts (to look them up in a master's script cache). */
export const REDLOCK_SCRIPT_SHAS: readonly string[] = [scriptSha(ACQUIRE_LUA), scriptSha(RELEASE_LUA)];

/**
 * The Redlock scripts as calls on `client`, each a plain EVAL/EVALSHA (redis-shared's `ScriptRunner`:
 * ioredis's `defineCommand` costs more client time per call than the rest of a round). A NOSCRIPT
 * reply (the server's cache was flushed under a live connection) to an acquire is an error for that
 * call — never a resend: a resent acquire could land after this round's release on the same
 * connection and leave a lock no one owns — and the next call sends the whole script again. A
 * release is resent whole at once (see below).
 */
export function defineRedlockScripts(client: LockClient): RedlockScripts {
  const acquire = new ScriptRunner(client, { lua: ACQUIRE_LUA });
  const release = new ScriptRunner(client, { lua: RELEASE_LUA });
  return {
    acquire: (args, sink, index) => vote(acquire, args, sink, index),
    // A release is sent whole again at once on NOSCRIPT: it deletes only this acquisition's value,
    // so it is harmless whenever it lands, and the master may hold a copy (its acquire went out
    // whole, or before a flush that came between the two).
    release: (args, sink, index) => vote(release, args, sink, index, true),
  };
}

// One script call as a vote: a reply of 1 is a yes. A failure tells the runner first (a NOSCRIPT
// makes its next call send the script); with `resend`, a NOSCRIPT is answered by sending it whole now.
function vote(runner: ScriptRunner, args: readonly ScriptArgument[], sink: VoteSink, index: number, resend = false): void {
  const answered = (reply: unknown): void => sink.answered(index, Number(reply) === 1);
  runner.run(args).then(answered, (error: unknown) => {
    if (resend && isNoScriptError(error)) {
      runner.runAgain(error, args).then(answered, (again: unknown) => sink.failed(index, again));
      return;
    }
    runner.failed(error);
    sink.failed(index, error);
  });
}

/** The start of a release announcement: `<length>:<release id>`, the id being the releasing acquisition's owner id. */
export function announcementHead(releaseId: string): string {
  return lengthPrefixed(releaseId);
}

/**
 * An announcement split back into the release id, the head of the line (the lock value of the
 * waiter to wake) and the lock key; `undefined` if malformed.
 */
export function parseAnnouncement(message: string): { releaseId: string; waiter: string; lockKey: string } | undefined {
  const release = splitLengthPrefixed(message);
  const waiter = release === undefined ? undefined : splitLengthPrefixed(release.rest);
  if (release === undefined || waiter === undefined) return undefined;
  return { releaseId: release.id, waiter: waiter.id, lockKey: waiter.rest };
}
