/**
 * The server-cost ladders of `@fencelock/redis`'s and `@fencelock/redlock`'s protocols, in a few
 * cycles: each step sends what its label says (counted by the server itself), every cycle acquires
 * and releases, and nothing is left.
 */
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { SCRIPT_COSTS_KEY_PREFIX, SCRIPT_COST_STEPS, redlockScriptCostSteps, runScriptCosts, scriptCostsMarkdown } from '../src/script-costs.js';

const { redisUrl } = topology();

// A ladder leaves no key of its own behind.
async function expectNothingLeft(): Promise<void> {
  const client = new Redis(redisUrl);
  try {
    expect(await client.keys(`*${SCRIPT_COSTS_KEY_PREFIX}*`)).toEqual([]);
  } finally {
    client.disconnect();
  }
}

describe('the server-cost ladder', () => {
  it('adds one part of the protocol per step, each cycle acquiring and releasing, and tabulates it', async () => {
    const results = await runScriptCosts(redisUrl, { cyclesPerRound: 5, rounds: 2 });
    expect(results.map((result) => result.id)).toEqual(SCRIPT_COST_STEPS.map((step) => step.id));
    const calls = Object.fromEntries(results.map((result) => [result.id, result.callsPerCycle]));
    for (const result of results) {
      expect(result.everyCycleAcquired).toBe(true);
      expect(result.range.rounds).toBe(2);
      expect(result.serverMicrosPerCycle).toBeGreaterThan(0);
      expect(calls[result.id]?.['del']).toBe(1);
    }
    // The plain cycle: one SET NX PX command and one script; every other step: two scripts.
    expect(calls['plain']).toMatchObject({ set: 1, evalsha: 1, get: 1 });
    for (const id of ['lua-lock', 'line', 'token', 'record', 'fencelock']) expect(calls[id]?.['evalsha']).toBe(2);
    expect(calls['lua-lock']?.['exists']).toBeUndefined();
    expect(calls['line']?.['exists']).toBe(2);
    expect(calls['line']?.['time']).toBeUndefined();
    // The token: the clock read once, the counter read and written (the lock's SET is the other one).
    expect(calls['token']).toMatchObject({ time: 1, get: 2, set: 2 });
    // The holder record: one more SET.
    expect(calls['record']).toMatchObject({ time: 1, set: 3 });
    // The provider's scripts make the same calls as the last step of the ladder.
    expect(calls['fencelock']).toEqual(calls['record']);
    const table = scriptCostsMarkdown(results, 'pnpm --filter @fencelock/bench bench:script-costs').join('\n');
    for (const step of SCRIPT_COST_STEPS) expect(table).toContain(`| ${step.label} |`);
    await expectNothingLeft();
  }, 60_000);

  it('prices the Redlock protocol on one master, from node-redlock’s scripts to the provider’s, and leaves nothing', async () => {
    const steps = await redlockScriptCostSteps();
    const results = await runScriptCosts(redisUrl, { cyclesPerRound: 5, rounds: 2 }, steps);
    expect(results.map((result) => result.id)).toEqual(['node-redlock', 'redlock-lua', 'redlock-line', 'redlock-fencelock']);
    const calls = Object.fromEntries(results.map((result) => [result.id, result.callsPerCycle]));
    for (const result of results) {
      expect(result.everyCycleAcquired).toBe(true);
      expect(calls[result.id]).toMatchObject({ evalsha: 2, set: 1, get: 1, del: 1 });
    }
    // node-redlock checks that the key is free before it sets it; the lock in Lua is one SET NX.
    expect(calls['node-redlock']?.['exists']).toBe(1);
    expect(calls['redlock-lua']?.['exists']).toBeUndefined();
    // The line of waiters: one look at it in each script, as the provider's own scripts make.
    expect(calls['redlock-line']?.['exists']).toBe(2);
    expect(calls['redlock-fencelock']).toEqual(calls['redlock-line']);
    // No token or holder record on Redlock: nothing else is read or written.
    for (const id of ['redlock-line', 'redlock-fencelock']) expect(Object.keys(calls[id] ?? {}).sort()).toEqual(['del', 'evalsha', 'exists', 'get', 'set']);
    const table = scriptCostsMarkdown(results, 'pnpm --filter @fencelock/bench bench:script-costs', 'On one master').join('\n');
    expect(table.startsWith('On one master (')).toBe(true);
    for (const step of steps) expect(table).toContain(`| ${step.label} |`);
    await expectNothingLeft();
  }, 60_000);
});
