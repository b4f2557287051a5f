/**
 * The Lua that hands out the next fencing token of a lock key, shared by the acquire script (a grant
 * to the caller) and the release script (a grant to the head of the line): it sets the local `token`
 * and writes it back to the counter `counter` (a Lua expression naming the key, such as `KEYS[2]`),
 * expiring `lifetime` ms later when that Lua expression is a number > 0. It needs the reply of
 * `TIME` in scope, in the local named `time`.
 *
 * token = max(counter + 1, floor), floor = server `TIME` in microseconds × 1000: the floor keeps
 * tokens increasing even when the counter was lost or rolled back (restart without persistence,
 * restore of an older RDB snapshot, failover to a lagging replica), as long as the server clock reads
 * later than it did when the last token was issued and fewer than 1000 tokens per microsecond of that
 * key were issued on average. The numbers are decimal strings: Lua numbers are doubles and lose
 * integers above 2^53, and a microsecond clock × 1000 is about 1.8e18. A counter that is not a
 * decimal string (someone else wrote the key) is replaced by the floor.
 */
export function nextTokenLua(counter: string, lifetime: string, time = 'now'): string {
  return `local micros = ${time}[2]
if #micros < 6 then micros = string.rep('0', 6 - #micros) .. micros end
local floor = ${time}[1] .. micros .. '000'
local current = redis.call('GET', ${counter})
local token = floor
-- Compared before it is checked to be decimal: at any pace below one token per microsecond the
-- floor has passed the counter, and the check is skipped.
if current and (#current > #floor or (#current == #floor and current >= floor)) and string.find(current, '^[1-9]%d*$') then
  -- current + 1, on the decimal string: trailing nines roll over to zeros.
  local i = #current
  while string.byte(current, i) == 57 do i = i - 1 end
  if i == 0 then
    token = '1' .. string.rep('0', #current)
  else
    token = string.sub(current, 1, i - 1) .. string.char(string.byte(current, i) + 1) .. string.rep('0', #current - i)
  end
end
local fence_ttl = tonumber(${lifetime} or '0') or 0
if fence_ttl > 0 then
  redis.call('SET', ${counter}, token, 'PX', fence_ttl)
else
  redis.call('SET', ${counter}, token)
end`;
}
