/**
 * The Lua line that every script which writes after reading `TIME` starts with, before any write.
 *
 * Redis 3.2-4.x replicate a script whole unless it asks for effects replication first, and refuse a
 * write that follows a non-deterministic command such as `TIME` in that mode. Redis 5 and later
 * replicate effects anyway (`replicate_commands` is a no-op there); Redis 7 and later, which name their
 * version in `redis.REDIS_VERSION`, are spared the call: the scripts run on every lock operation.
 */
export const EFFECTS_REPLICATION_LUA = 'if not redis.REDIS_VERSION and redis.replicate_commands then redis.replicate_commands() end';
