import { EFFECTS_REPLICATION_LUA, nextTokenLua, type RedisLockScript } from '@fencelock/redis-shared';

/*
 * The semaphore protocol. A semaphore `<keyPrefix><key>` has three keys, in one Cluster slot:
 * - holders: a sorted set of `<permits>|<owner id>` scored by expiry (server time, ms);
 * - info: a hash owner id → `<limit> <token>[ <metadata>]` (what inspect shows; the limit of the holders);
 * - fence: the token counter, under the same rule as the lock's (see the acquire script of
 *   `@fencelock/redis-shared`, `nextTokenLua`): token = max(counter + 1, server TIME in µs × 1000), so tokens keep
 *   increasing even when the counter is lost, as long as the server clock does not step back.
 * Every script first drops the holders whose expiry has passed, so an abandoned permit is free again
 * at its expiry with no timer anywhere. The holders and info keys expire with the last holder.
 */

// Shared by the scripts: `now` (ms, server clock) and dropping the expired holders with their info.
const PRELUDE = `
${EFFECTS_REPLICATION_LUA}
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, member in ipairs(expired) do
  redis.call('HDEL', KEYS[2], string.sub(member, string.find(member, '|', 1, true) + 1))
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
-- The holders and info keys live as long as their last holder.
local function keep_until_last()
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', KEYS[2])
    return
  end
  local ms = math.max(1, tonumber(last[2]) - now)
  redis.call('PEXPIRE', KEYS[1], ms)
  redis.call('PEXPIRE', KEYS[2], ms)
end
local function find(owner)
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    local sep = string.find(member, '|', 1, true)
    if string.sub(member, sep + 1) == owner then return member end
  end
  return nil
end
`;

/**
 * KEYS: holders, info, fence. ARGV: owner id, permits, limit, ttl ms, fence counter ttl ms (0: none),
 * metadata (optional).
 * Returns the token (a decimal string) when granted; `{'held', <ms until the first holder expires>}`
 * when the permits do not fit; `{'limit', <stored limit>}` when the holders use another limit. An
 * earlier attempt of the same acquisition (same owner id, its reply lost) is taken over, as for locks.
 */
export const semaphoreAcquireScript: RedisLockScript = {
  name: 'fencelockSemaphoreAcquire',
  numberOfKeys: 3,
  lua: `${PRELUDE}
local owner = ARGV[1]
local permits = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local used = 0
local stored = nil
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local sep = string.find(member, '|', 1, true)
  local holder = string.sub(member, sep + 1)
  if holder == owner then
    redis.call('ZREM', KEYS[1], member)
  else
    used = used + tonumber(string.sub(member, 1, sep - 1))
    if stored == nil then
      local info = redis.call('HGET', KEYS[2], holder)
      if info then stored = tonumber(string.match(info, '^(%d+)')) end
    end
  end
end
if stored ~= nil and stored ~= limit then return {'limit', tostring(stored)} end
if used + permits > limit then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {'held', tostring(math.max(0, tonumber(first[2]) - now))}
end
${nextTokenLua('KEYS[3]', 'ARGV[5]', 'time')}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), permits .. '|' .. owner)
local info = limit .. ' ' .. token
if ARGV[6] then info = info .. ' ' .. ARGV[6] end
redis.call('HSET', KEYS[2], owner, info)
keep_until_last()
return token
`,
};

/** KEYS: holders, info. ARGV: owner id, ttl ms. Returns 1 when extended, 0 when the owner no longer holds. */
export const semaphoreExtendScript: RedisLockScript = {
  name: 'fencelockSemaphoreExtend',
  numberOfKeys: 2,
  lua: `${PRELUDE}
local member = find(ARGV[1])
if member == nil then
  keep_until_last()
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), member)
keep_until_last()
return 1
`,
};

/**
 * KEYS: holders, info. ARGV: owner id, channel. Returns 1 when the owner held permits (now freed and
 * announced on the channel with the holders key, so that a waiter of this process wakes), else 0.
 */
export const semaphoreReleaseScript: RedisLockScript = {
  name: 'fencelockSemaphoreRelease',
  numberOfKeys: 2,
  lua: `${PRELUDE}
local member = find(ARGV[1])
if member == nil then
  keep_until_last()
  return 0
end
redis.call('ZREM', KEYS[1], member)
redis.call('HDEL', KEYS[2], ARGV[1])
keep_until_last()
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1
`,
};

/** KEYS: holders, info. Returns a flat list: owner, permits, ms left, info string; per holder. */
export const semaphoreInspectScript: RedisLockScript = {
  name: 'fencelockSemaphoreInspect',
  numberOfKeys: 2,
  lua: `${PRELUDE}
local reply = {}
local members = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #members, 2 do
  local member = members[i]
  local sep = string.find(member, '|', 1, true)
  local owner = string.sub(member, sep + 1)
  reply[#reply + 1] = owner
  reply[#reply + 1] = string.sub(member, 1, sep - 1)
  reply[#reply + 1] = tostring(math.max(0, tonumber(members[i + 1]) - now))
  reply[#reply + 1] = redis.call('HGET', KEYS[2], owner) or ''
end
return reply
`,
};
