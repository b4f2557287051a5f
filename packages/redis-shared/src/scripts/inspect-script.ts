import type { RedisLockScript } from './redis-lock-script.js';

/**
 * Inspect (used by the provider's `inspect`, not part of the shared protocol): reads a lock and its
 * metadata string (see the acquire script) in one atomic step.
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
local pttl = redis.call('PTTL', KEYS[1])
-- '<token> <owner byte length> <owner>[ <metadata>]'; anything else (a hash of an older layout: a
-- WRONGTYPE error) reads as no metadata.
local meta = redis.pcall('GET', KEYS[2])
if type(meta) ~= 'string' then return {value, pttl} end
local token, length, rest = string.match(meta, '^(%d+) (%d+) (.*)$')
if not token then return {value, pttl} end
length = tonumber(length)
local owner = string.sub(rest, 1, length)
local metadata = false
if #rest > length then metadata = string.sub(rest, length + 2) end
return {value, pttl, owner, token, metadata}
`,
};
