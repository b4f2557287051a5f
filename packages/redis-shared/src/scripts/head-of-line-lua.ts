import { LINE_TAG_LENGTH } from '../line-tag.js';

/**
 * The Lua both release scripts (`@fencelock/redis`'s and `@fencelock/redlock`'s) run on the line of
 * waiters `registry` (a Lua expression naming the sorted set, such as `KEYS[2]`): it drops the lapsed
 * registrations and sets the local `head` to the member registered longest ago, or nil when no live
 * one is left. The scores are the server times (ms) until which each registration lasts. With a
 * head, `head_id` is its id and `head_tag` its provider's line tag (`<id>|<tag>`, see `line-tag.ts`),
 * or `head` itself and nil for a registration without one. It reads `TIME`: a script that includes it
 * starts with `EFFECTS_REPLICATION_LUA`, before its first write.
 */
export function headOfLineLua(registry: string): string {
  return `local now = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', ${registry}, '-inf', now[1] * 1000 + math.floor(now[2] / 1000))
local head = redis.call('ZRANGE', ${registry}, 0, 0)[1]
local head_id, head_tag = head, nil
if head and #head > ${LINE_TAG_LENGTH + 1} and string.sub(head, -${LINE_TAG_LENGTH + 1}, -${LINE_TAG_LENGTH + 1}) == '|' then
  head_id = string.sub(head, 1, -${LINE_TAG_LENGTH + 2})
  head_tag = string.sub(head, -${LINE_TAG_LENGTH})
end`;
}
