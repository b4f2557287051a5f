/**
 * The Lua both release scripts (`@fencelock/redis`'s and `@fencelock/redlock`'s) run on the line of
 * waiters `registry` (a Lua expression naming the sorted set, such as `KEYS[2]`): it drops the lapsed
 * registrations and sets the local `head` to the member registered longest ago, or nil when no live
 * one is left. The scores are the server times (ms) until which each registration lasts.
 */
export function headOfLineLua(registry: string): string {
  return `-- Redis 3.2-4.x need effects replication before a write that follows TIME; no-op since Redis 5.
if redis.replicate_commands then redis.replicate_commands() end
local now = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', ${registry}, '-inf', now[1] * 1000 + math.floor(now[2] / 1000))
local head = redis.call('ZRANGE', ${registry}, 0, 0)[1]`;
}
