import { headOfLineLua } from './head-of-line-lua.js';
import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Release: delete the lock only while it holds our owner id.
 *
 * KEYS[1] = the lock key, optional KEYS[2] = its waiter registry and optional KEYS[3] = its hand-off
 * reservation (see the acquire script). ARGV[1] = owner id, optional ARGV[2] = a pub/sub channel on
 * which the lock key is published after the delete, optional ARGV[3] = how long (ms) the
 * reservation lasts (with KEYS[3]).
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
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if KEYS[2] == nil then
  if ARGV[2] then redis.call('PUBLISH', ARGV[2], KEYS[1]) end
  return 1
end
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
${headOfLineLua('KEYS[2]')}
if head == nil then return 1 end
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
