import { describe, expect, it } from 'vitest';
import { EFFECTS_REPLICATION_LUA, extendManyScript, inspectScript, redisLockScripts, switchesReplicationBeforeWrites } from '../src/index.js';

describe('the protocol scripts', () => {
  it('exposes the three protocol scripts with stable names and key counts', () => {
    expect(Object.keys(redisLockScripts)).toEqual(['acquire', 'release', 'extend']);
    expect(redisLockScripts.acquire).toMatchObject({ name: 'fencelockAcquire', numberOfKeys: 2 });
    expect(redisLockScripts.release).toMatchObject({ name: 'fencelockRelease', numberOfKeys: 1 });
    expect(redisLockScripts.extend).toMatchObject({ name: 'fencelockExtend', numberOfKeys: 1 });
    for (const script of Object.values(redisLockScripts)) expect(script.lua.length).toBeGreaterThan(0);
  });
});

describe('replication on Redis 3.2-4.x', () => {
  it('every script that reads TIME asks for effects replication before its first write', () => {
    for (const script of [...Object.values(redisLockScripts), extendManyScript, inspectScript]) {
      expect(switchesReplicationBeforeWrites(script.lua), script.name).toBe(true);
    }
  });

  it('the check tells a switch asked after a write, or never, from one asked first', () => {
    const time = "local now = redis.call('TIME')";
    expect(switchesReplicationBeforeWrites(`${EFFECTS_REPLICATION_LUA}\nredis.call('DEL', KEYS[1])\n${time}`)).toBe(true);
    expect(switchesReplicationBeforeWrites(`redis.call('DEL', KEYS[1])\n${EFFECTS_REPLICATION_LUA}\n${time}`)).toBe(false);
    expect(switchesReplicationBeforeWrites(`${time}\nredis.call('SET', KEYS[1], now[1])`)).toBe(false);
    expect(switchesReplicationBeforeWrites("redis.call('DEL', KEYS[1])")).toBe(true);
  });
});
