/**
 * The Lua line that every script which writes after reading `TIME` starts with, before any write.
 *
 * Redis 3.2-4.x replicate a script whole unless it asks for effects replication first, and refuse a
 * write that follows a non-deterministic command such as `TIME` in that mode. Redis 5 and later
 * replicate effects anyway (`replicate_commands` is a no-op there); Redis 7 and later, which name their
 * version in `redis.REDIS_VERSION`, are spared the call: the scripts run on every lock operation.
 */
export const EFFECTS_REPLICATION_LUA = 'if not redis.REDIS_VERSION and redis.replicate_commands then redis.replicate_commands() end';

// The commands these scripts write with (flagged `write` by Redis; PUBLISH is not).
const WRITE_CALL = /redis\.p?call\(\s*'(?:SET|DEL|PEXPIRE|EXPIRE|ZADD|ZREM|ZREMRANGEBYSCORE|HSET|HDEL|INCR|INCRBY)'/i;
const TIME_CALL = /redis\.p?call\(\s*'TIME'/i;

/**
 * Whether `lua` may run on Redis 3.2-4.x as far as replication goes: a script that reads `TIME` must
 * have {@link EFFECTS_REPLICATION_LUA} before the first write in its text (a write after the switch
 * asked too late is refused there). A check for tests of scripts built on these pieces; the order in
 * the text is conservative, as a Lua function can only be called after it is defined.
 */
export function switchesReplicationBeforeWrites(lua: string): boolean {
  if (!TIME_CALL.test(lua)) return true;
  const switchAt = lua.indexOf(EFFECTS_REPLICATION_LUA);
  if (switchAt < 0) return false;
  const firstWrite = WRITE_CALL.exec(lua)?.index;
  return firstWrite === undefined || switchAt < firstWrite;
}
