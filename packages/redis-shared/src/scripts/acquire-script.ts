import { EFFECTS_REPLICATION_LUA } from './effects-replication-lua.js';
import { nextTokenLua } from './next-token-lua.js';
import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Acquire: one round trip that takes the lock and hands out a fencing token.
 *
 * KEYS[1] = the lock key, KEYS[2] = the key's fence counter (same hash slot), optional KEYS[3] = a
 * metadata side key (same slot), optional KEYS[4] = the key's waiter registry and optional KEYS[5]
 * = its hand-off reservation, optional KEYS[6] = its direct grants (same slot; KEYS[4] only with
 * KEYS[3], KEYS[5] only with KEYS[4], KEYS[6] only with KEYS[5]). ARGV[1] = owner id, ARGV[2] = TTL
 * in ms, optional ARGV[3] = `'1'` to get the holder's remaining TTL instead of nil when the key is
 * held, optional ARGV[4] = how long (ms) a failed attempt registers its owner as a waiter (`''` or
 * `'0'`: it does not wait), optional ARGV[5] = how long (ms) the fence counter outlives this
 * acquisition (`''` or `'0'`: forever), optional ARGV[6] = the waiter's line tag (`''`: none; see the
 * release script), optional ARGV[7] = the waiter's direct-grant ask `<attempt number>:<grant TTL in
 * ms>` (`''`: none; with KEYS[6] and a line tag), optional ARGV[8] = metadata.
 *
 * Guarantees:
 * - The lock is a plain `SET lock owner NX PX ttl`, so any other SET-NX lock on the same key name
 *   (node-redlock, redis-py's `Lock`, a hand-written one) excludes it and is excluded by it.
 * - Returns nil (nothing written at all) when the key holds any other value; with ARGV[3] = '1',
 *   returns `{pttl}` instead (the holder's remaining ms, -1 if it never expires), so a waiter can
 *   try again right when a lock that is never released (its holder crashed) expires.
 * - Hand-off to waiters (with KEYS[4] and KEYS[5]): a failed attempt with ARGV[4] > 0 records its
 *   owner in a sorted set, scored by server time (ms, to the microsecond) + ARGV[4] (each attempt
 *   renews it; the waiter removes itself when it stops waiting, and an entry it could not remove
 *   lapses by itself). A
 *   release while entries exist reserves the free key for them for a moment (KEYS[5], see the
 *   release script). Only while that reservation lasts and live entries exist, a waiting attempt
 *   (ARGV[4] > 0) of an owner that is not registered — a newcomer, or the holder that just released
 *   and comes straight back — is refused with `{-2}` and registered in turn; so a released lock goes
 *   to a client that was already waiting, not to whoever asks first. A free key is granted at once
 *   otherwise: always to a try-once attempt (ARGV[4] empty or 0), and to anyone when no release just
 *   reserved it (registrations of waiters that crashed hold nobody back). A grant ends the
 *   reservation. Clients that do not pass KEYS[4] (other SET-NX locks, older versions) are not held
 *   back, nor are attempts without KEYS[5] (a provider whose `handoff` is `'barging'`), which also
 *   leave a reservation to lapse by itself.
 * - Direct grants (with KEYS[6] and ARGV[7]): a failed attempt that registers also records its ask
 *   in the hash KEYS[6] under its registration (with its metadata), so that a release whose head of
 *   the line it is grants the lock to it in the release script itself (see the release script): the
 *   waiter learns of its grant from the announcement, with no attempt of its own. The ask names the
 *   attempt, so that the waiter anchors the grant's validity at the send time of an attempt the
 *   server had processed before the grant. A grant by attempt removes the ask with the registration.
 * - When the key already holds ARGV[1] — an earlier attempt of the same acquisition whose reply was
 *   lost (a client timeout, a dropped connection) — the attempt takes it over: `PEXPIRE` to the new
 *   TTL and a fresh token. Owner ids are unique per acquisition, so this never makes a lock
 *   reentrant; it only keeps a retry from waiting for its own lost attempt to expire.
 * - On success returns the new token as a decimal string, strictly greater than every token this
 *   counter handed out before (see `next-token-lua.ts`: the counter + 1, and never below a floor
 *   from the server clock, so that tokens keep increasing after the counter was lost).
 * - With ARGV[5], the counter expires that long after the last acquisition of its key, so that a
 *   service locking one key per order id does not keep one counter per order forever. An expired
 *   counter is an absent one: the next token is the floor, larger than every earlier token as long
 *   as the server clock has not stepped back by more than that lifetime since the key's last token.
 * - The counter is incremented as a decimal string in Lua (no INCR, whose reply would be a double
 *   here and which stops at 2^63) and written back with SET.
 * - With KEYS[3], stores one string `<token> <owner byte length> <owner>[ <metadata>]` (metadata
 *   from ARGV[8]) expiring with the lock, so `inspect` can show them; it is only trusted while its
 *   owner matches the lock's value. Release leaves it to expire: a later acquire overwrites it.
 * - An uncontended acquire makes six calls: EXISTS (the waiter registry), SET NX, TIME, GET and SET
 *   (the counter), SET PX (the metadata), and builds no more than the token and the metadata.
 */
export const acquireScript: RedisLockScript = {
  name: 'fencelockAcquire',
  numberOfKeys: 2,
  lua: `
${EFFECTS_REPLICATION_LUA}
local waiters = KEYS[4]
-- Nobody waits (no registry: the common case): a bare SET NX decides, with no more reads.
local lined = waiters ~= nil and redis.call('EXISTS', waiters) == 1
local now
if lined or redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) == false then
  now = redis.call('TIME')
  local reserved = KEYS[5]
  local register = tonumber(ARGV[4] or '0') or 0
  -- A registration is the owner id, followed by '|' and the waiter's line tag when it has one.
  local member = ARGV[1]
  if ARGV[6] and ARGV[6] ~= '' then member = ARGV[1] .. '|' .. ARGV[6] end
  local grants = KEYS[6]
  local function wait_in_line(reply)
    if waiters and register > 0 then
      -- Microseconds keep registrations made within one millisecond in the order they were made (the
      -- head of the line is the lowest score); formatted, as Lua's own number format keeps 14 digits.
      redis.call('ZADD', waiters, string.format('%.3f', now[1] * 1000 + now[2] / 1000 + register), member)
      if redis.call('PTTL', waiters) < register then redis.call('PEXPIRE', waiters, register) end
      if grants and ARGV[7] and ARGV[7] ~= '' and member ~= ARGV[1] then
        local ask = ARGV[7]
        if ARGV[8] then ask = ask .. ' ' .. ARGV[8] end
        redis.call('HSET', grants, member, ask)
        if redis.call('PTTL', grants) < register then redis.call('PEXPIRE', grants, register) end
      end
    end
    if ARGV[3] == '1' then return {reply} end
    return false
  end
  if lined then
    redis.call('ZREMRANGEBYSCORE', waiters, '-inf', now[1] * 1000 + math.floor(now[2] / 1000))
    if register > 0 and reserved and redis.call('EXISTS', reserved) == 1 and redis.call('ZCARD', waiters) > 0
      and redis.call('ZSCORE', waiters, member) == false and redis.call('EXISTS', KEYS[1]) == 0 then
      return wait_in_line(-2)
    end
  end
  -- Without a line the SET NX above has failed already.
  if not lined or redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) == false then
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then
      return wait_in_line(redis.call('PTTL', KEYS[1]))
    end
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  -- Only a registry that existed can hold our entry, and only a release that saw it made a reservation.
  if lined then
    redis.call('ZREM', waiters, member)
    if grants then redis.call('HDEL', grants, member) end
    if reserved then redis.call('DEL', reserved) end
  end
else
  now = redis.call('TIME')
end
${nextTokenLua('KEYS[2]', 'ARGV[5]')}
if KEYS[3] then
  local meta = token .. ' ' .. #ARGV[1] .. ' ' .. ARGV[1]
  if ARGV[8] then meta = meta .. ' ' .. ARGV[8] end
  redis.call('SET', KEYS[3], meta, 'PX', ARGV[2])
end
return token
`,
};
