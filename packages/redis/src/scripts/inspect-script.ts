import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Inspect (used by the provider's `inspect`, not part of the shared protocol): reads a lock and its
 * metadata hash in one atomic step.
 *
 * KEYS[1] = the lock key, KEYS[2] = its metadata side key (same slot). Returns nil when the key is
 * free, else `{value, pttl, owner, token, metadata}` (the last three nil where absent). A script
 * rather than MULTI because ioredis' client-side slot check (cluster-key-slot 1.1.2) miscomputes keys
 * such as `{}{x}` (Redis hashes them whole) and refuses the transaction; a script is routed by its
 * first key and follows MOVED.
 */
export const inspectScript: RedisLockScript = {
  name: 'fencelockInspect',
  numberOfKeys: 2,
  lua: `
local value = redis.call('GET', KEYS[1])
if not value then return false end
local meta = redis.call('HMGET', KEYS[2], 'owner', 'token', 'metadata')
return {value, redis.call('PTTL', KEYS[1]), meta[1], meta[2], meta[3]}
`,
};
