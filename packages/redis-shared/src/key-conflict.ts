/**
 * Redis's answer when a command meets a key holding another type of value than it works on:
 * `WRONGTYPE`, also inside the error of a script whose `redis.call` met it. For a lock, that is a
 * value something else wrote at one of its keys; asking again gets the same answer until somebody
 * removes it, so adapters report it as `LOCK_KEY_CONFLICT` at once.
 */
const WRONGTYPE = /\bWRONGTYPE\b/;

/** The server's words, when `error` is a `WRONGTYPE` answer; `undefined` for anything else. */
export function redisKeyConflict(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : undefined;
  if (message === undefined || !WRONGTYPE.test(message)) return undefined;
  // Redis 7 adds where in the script it happened ("script: <sha>, on @user_script:57."): not the user's concern.
  return message.replace(/\s*script: [0-9a-f]+, on @user_script:\d+\.?\s*$/, '').trim();
}
