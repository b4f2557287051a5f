import { describe, expect, it } from 'vitest';
import { redisLockScripts } from '../src/index.js';

describe('the protocol scripts', () => {
  it('exposes the three protocol scripts with stable names and key counts', () => {
    expect(Object.keys(redisLockScripts)).toEqual(['acquire', 'release', 'extend']);
    expect(redisLockScripts.acquire).toMatchObject({ name: 'fencelockAcquire', numberOfKeys: 2 });
    expect(redisLockScripts.release).toMatchObject({ name: 'fencelockRelease', numberOfKeys: 1 });
    expect(redisLockScripts.extend).toMatchObject({ name: 'fencelockExtend', numberOfKeys: 1 });
    for (const script of Object.values(redisLockScripts)) expect(script.lua.length).toBeGreaterThan(0);
  });
});
