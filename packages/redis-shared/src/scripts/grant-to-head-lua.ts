/**
 * The Lua the release script runs after `headOfLineLua` has found a live `head`: when that head left
 * a direct-grant ask in the hash `grants` (`<attempt number>:<grant TTL in ms>[ <metadata>]`, see the
 * acquire script) and
 * the Lua expression `enabled` holds, it sets the lock key `lock` to the head's id with the grant
 * TTL and takes the head out of the line (`registry`) and out of `grants`. It sets the locals
 * `granted` (whether it did), `grant_attempt` (the number, a string), `grant_px` and
 * `grant_metadata` (or nil); the script then hands out what else a grant needs and announces it.
 */
export function grantToHeadLua(names: { readonly lock: string; readonly registry: string; readonly grants: string; readonly enabled?: string }): string {
  const { lock, registry, grants, enabled = 'true' } = names;
  return `local granted, grant_attempt, grant_px, grant_metadata = false, nil, nil, nil
local ask = ${enabled} and head_tag and redis.call('HGET', ${grants}, head)
if ask then
  local spec = ask
  local space = string.find(ask, ' ', 1, true)
  if space then
    spec = string.sub(ask, 1, space - 1)
    grant_metadata = string.sub(ask, space + 1)
  end
  local colon = string.find(spec, ':', 1, true)
  grant_attempt = colon and string.sub(spec, 1, colon - 1)
  grant_px = colon and tonumber(string.sub(spec, colon + 1))
  if grant_px and grant_px >= 1 and string.find(grant_attempt, '^%d+$') then
    redis.call('SET', ${lock}, head_id, 'PX', grant_px)
    redis.call('ZREM', ${registry}, head)
    redis.call('HDEL', ${grants}, head)
    granted = true
  end
end`;
}
