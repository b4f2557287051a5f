import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Extend many: the extend script for a batch of locks in one round trip (the provider's automatic
 * extensions due together).
 *
 * ARGV[1] = keys per lock, 1 or 2; KEYS = per lock, its key and (with 2) its metadata side key;
 * ARGV[2..] = per lock, its owner id and TTL in ms, in the same order. On a cluster every key of one
 * call must be in one hash slot.
 *
 * Guarantees, per pair, exactly those of the extend script: `PEXPIRE` only while the lock holds its
 * owner id (never SET, so a lost lock is never re-created); the reply is an array of 1 (extended) or
 * 0 (not ours any more, a value of another type included), one per pair, in order.
 */
export const extendManyScript: RedisLockScript = {
  name: 'fencelockExtendMany',
  numberOfKeys: 0,
  lua: `
local stride = tonumber(ARGV[1])
local results = {}
for n = 0, #KEYS / stride - 1 do
  local key = KEYS[n * stride + 1]
  local owner, ttl = ARGV[2 * n + 2], ARGV[2 * n + 3]
  -- pcall: a value of another type at one lock's key (written by something else) is not ours, and
  -- must not fail the extension of the other locks of the batch.
  if redis.pcall('GET', key) == owner then
    redis.call('PEXPIRE', key, ttl)
    if stride == 2 then redis.call('PEXPIRE', KEYS[n * stride + 2], ttl) end
    results[#results + 1] = 1
  else
    results[#results + 1] = 0
  end
end
return results
`,
};
