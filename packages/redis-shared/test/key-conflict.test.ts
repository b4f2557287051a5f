import { describe, expect, it } from 'vitest';
import { redisKeyConflict } from '../src/index.js';

describe('redisKeyConflict', () => {
  it("keeps the server's words of a WRONGTYPE reply, without where in the script it happened", () => {
    const direct = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    expect(redisKeyConflict(direct)).toBe('WRONGTYPE Operation against a key holding the wrong kind of value');
    // Redis 7 adds the script and line to an error raised inside a script.
    const scripted = new Error('WRONGTYPE Operation against a key holding the wrong kind of value script: 5b6ae42fefde32584ce25aaf69d955275f59b244, on @user_script:57.');
    expect(redisKeyConflict(scripted)).toBe('WRONGTYPE Operation against a key holding the wrong kind of value');
    // Older servers wrap it in the script error.
    expect(redisKeyConflict(new Error('ERR Error running script (call to f_5b6a…): @user_script:57: WRONGTYPE Operation against a key holding the wrong kind of value'))).toContain('WRONGTYPE');
  });

  it('is undefined for anything else: other replies, a word that only contains it, a non-error', () => {
    expect(redisKeyConflict(new Error('NOSCRIPT No matching script'))).toBeUndefined();
    expect(redisKeyConflict(new Error('ERR value is not an integer or out of range'))).toBeUndefined();
    expect(redisKeyConflict(new Error('NOTWRONGTYPEX'))).toBeUndefined();
    expect(redisKeyConflict('WRONGTYPE')).toBeUndefined();
    expect(redisKeyConflict(undefined)).toBeUndefined();
  });
});
