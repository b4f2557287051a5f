import { EFFECTS_REPLICATION_LUA } from './effects-replication-lua.js';
import { grantToHeadLua } from './grant-to-head-lua.js';
import { headOfLineLua } from './head-of-line-lua.js';
import { nextTokenLua } from './next-token-lua.js';
import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Release: delete the lock only while it holds our owner id.
 *
 * KEYS[1] = the lock key, optional KEYS[2] = its waiter registry, optional KEYS[3] = its hand-off
 * reservation, optional KEYS[4], KEYS[5] and KEYS[6] = its direct grants, fence counter and metadata
 * side key (see the acquire script; all three or none). ARGV[1] = owner id, optional ARGV[2] = a
 * pub/sub channel on which the lock key is published after the delete, optional ARGV[3] = how long
 * (ms) the reservation lasts (with KEYS[3]), optional ARGV[4] = how long (ms) the fence counter
 * outlives a grant (as the acquire script's ARGV[5]), optional ARGV[5] = a registration to take out
 * of the line first (`''`: none): a waiter that stops waiting releases what a grant may have just
 * given it and leaves the line in one call.
 *
 * Guarantees:
 * - Never deletes a lock another owner holds (a newer holder after our expiry, a foreign SET-NX
 *   lock): compare and delete run atomically in one script. Releasing twice returns 0 the second time.
 * - Returns 1 when it deleted our lock, 0 otherwise.
 * - With ARGV[2], waiters subscribed to that channel learn of the release at once; they still poll,
 *   for locks that end by expiry or whose message is missed. Without KEYS[2] the message is the
 *   lock key. With KEYS[2], the message goes out only while live waiters are registered (lapsed
 *   registrations are dropped first), so an uncontended release costs no pub/sub traffic, and it
 *   names the head of the line — the registration refreshed longest ago, so the waiter that has
 *   waited longest since its last attempt — as `<length of its owner id>:<owner id><lock key>`
 *   (see `announcement.ts`): only that waiter's process tries at once, instead of every waiting
 *   process sending an attempt that all but one lose. A registration `<owner id>|<tag>` (a waiter
 *   with a line tag, see the acquire script) is announced on the channel `ARGV[2]:<tag>` instead,
 *   with the owner id alone: the process of each provider listens on its own tag, so a release
 *   wakes only the head's process, not every process that waits for some lock.
 * - Direct grant (with KEYS[4] to KEYS[6]): when the head of the line registered a direct-grant ask
 *   (see the acquire script), the release grants it the lock at once — `SET` the lock to its owner id
 *   with the ask's grant TTL, the next fencing token, the metadata — and announces the grant on the
 *   head's channel as `=<length>:<owner id><attempt number>:<token>:<lock key>`: the waiter holds the
 *   lock when it reads the message, with no attempt of its own, so a contended hand-off costs one
 *   release instead of a release, a wake-up and an attempt. The grant TTL is short (the waiter
 *   extends to its own TTL at once), so a waiter that died while in line holds the lock back no
 *   longer than a reservation would.
 * - With KEYS[3], a release while waiters are registered reserves the free key for them for ARGV[3]
 *   ms: a waiting newcomer is turned away meanwhile (see the acquire script), a try-once attempt
 *   is not.
 * - The metadata side key is left to expire with the TTL it was given: it is only believed while its
 *   owner is the lock's value, and the next acquire overwrites it.
 */
export const releaseScript: RedisLockScript = {
  name: 'fencelockRelease',
  numberOfKeys: 1,
  lua: `
${EFFECTS_REPLICATION_LUA}
if ARGV[5] and ARGV[5] ~= '' and KEYS[2] then
  redis.call('ZREM', KEYS[2], ARGV[5])
  if KEYS[4] then redis.call('HDEL', KEYS[4], ARGV[5]) end
end
-- pcall: a value of another type (written by something else) is not ours either, and stays.
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if KEYS[2] == nil then
  if ARGV[2] then redis.call('PUBLISH', ARGV[2], KEYS[1]) end
  return 1
end
-- Nobody waits (the common case): nothing more to write. Asks left by lapsed registrations expire with their hash.
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
${headOfLineLua('KEYS[2]')}
if head == nil then
  -- Asks of registrations that lapsed go with the last of the line.
  if KEYS[4] then redis.call('DEL', KEYS[4]) end
  return 1
end
${grantToHeadLua({ lock: 'KEYS[1]', registry: 'KEYS[2]', grants: 'KEYS[4]', enabled: 'KEYS[6]' })}
if granted then
${nextTokenLua('KEYS[5]', 'ARGV[4]')}
  local meta = token .. ' ' .. #head_id .. ' ' .. head_id
  if grant_metadata then meta = meta .. ' ' .. grant_metadata end
  redis.call('SET', KEYS[6], meta, 'PX', grant_px)
  if KEYS[3] then redis.call('DEL', KEYS[3]) end
  if ARGV[2] then
    redis.call('PUBLISH', ARGV[2] .. ':' .. head_tag, '=' .. #head_id .. ':' .. head_id .. grant_attempt .. ':' .. token .. ':' .. KEYS[1])
  end
  return 1
end
if ARGV[2] then
  -- A head registered with a line tag is told on its own channel: only its process wakes.
  if head_tag then
    redis.call('PUBLISH', ARGV[2] .. ':' .. head_tag, #head_id .. ':' .. head_id .. KEYS[1])
  else
    redis.call('PUBLISH', ARGV[2], #head .. ':' .. head .. KEYS[1])
  end
end
if KEYS[3] then redis.call('SET', KEYS[3], '1', 'PX', ARGV[3]) end
return 1
`,
};
