export type { RedisLockScript } from './scripts/redis-lock-script.js';
export { redisLockScripts, defineRedisLockCommands } from './scripts/define-commands.js';
export type { RedisLockCommands } from './scripts/define-commands.js';
