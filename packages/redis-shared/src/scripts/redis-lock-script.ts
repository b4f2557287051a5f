/**
 * One Lua script of the fencelock Redis lock protocol, in the shape ioredis' `defineCommand` takes.
 * The scripts are `@fencelock/redis`'s (Redlock's masters run its extend-many script too); they are
 * plain data so any Redis client can load them.
 */
export interface RedisLockScript {
  /** The command name the script is registered under with `client.defineCommand` (e.g. `fencelockAcquire`). */
  readonly name: string;
  /** The Lua source. Loaded once per connection and run with EVALSHA (EVAL on NOSCRIPT). */
  readonly lua: string;
  /** How many of the leading arguments are keys (`KEYS[1..n]`); the rest are `ARGV`. */
  readonly numberOfKeys: number;
}
