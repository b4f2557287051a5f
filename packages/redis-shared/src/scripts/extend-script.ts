import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Extend: reset the lock's TTL only while it holds our owner id.
 *
 * KEYS[1] = the lock key, optional KEYS[2] = its metadata side key. ARGV[1] = owner id, ARGV[2] = the
 * new TTL in ms (counted from when the server runs the script).
 *
 * Guarantees:
 * - Uses `PEXPIRE`, never `SET`: an extend that races a release, or arrives after expiry, cannot
 *   re-create the lock. Returns 1 when our lock was prolonged, 0 when the key is gone or foreign.
 */
export const extendScript: RedisLockScript = {
  name: 'fencelockExtend',
  numberOfKeys: 1,
  lua: `
-- pcall: a value of another type (written by something else) is not ours either.
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if KEYS[2] then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return 1
`,
};
