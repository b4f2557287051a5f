import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode, HOLD_ENV, type InspectJson } from '../src/index.js';
import { CRITICAL_SECTION, KILL_GRACE, killRunningFencelocks, runFencelock, startFencelock } from './support/fencelock-process.js';
import { LockLog } from './support/lock-log.js';

// `hold --permits` end to end on the single Redis (a multi-permit backend): real processes, the
// fixture's log for what ran when, and the server itself for a loss.
describe('fencelock hold --permits on redis, end to end', () => {
  const { redisUrl } = topology();
  const env = { FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: redisUrl };
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  const logs: LockLog[] = [];
  const newLog = (): LockLog => {
    const log = new LockLog();
    logs.push(log);
    return log;
  };
  const key = (): string => `cli-sem:${randomUUID()}`;
  const section = (log: LockLog, who: string, ...extra: string[]): string[] => [process.execPath, CRITICAL_SECTION, log.path, who, ...extra];
  const inspect = async (semaphoreKey: string): Promise<InspectJson> => {
    const result = await runFencelock(['inspect', '--semaphore', semaphoreKey, '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as InspectJson;
  };

  beforeAll(async () => {
    await client.connect();
  });
  afterEach(async () => {
    await killRunningFencelocks();
    for (const log of logs.splice(0)) log.remove();
  });
  afterAll(() => {
    client.disconnect();
  });

  it('runs two holds of a semaphore of 2 together; a third waits until one exits, with a greater token', async () => {
    const log = newLog();
    const semaphoreKey = key();
    // A semaphore of 2 lets B in beside A: the fixture's overlap marker says so ("B OVERLAP").
    const a = startFencelock(['hold', '--permits', '2', semaphoreKey, '--', ...section(log, 'A', '--gate', log.gate('A'))], env);
    await a.waitForStdout('ready A');
    const b = startFencelock(['hold', '--permits', '2', semaphoreKey, '--', ...section(log, 'B', '--gate', log.gate('B'))], env);
    await b.waitForStdout('ready B');
    const c = startFencelock(['hold', '--permits', '2', '--verbose', '--wait', '60s', semaphoreKey, '--', ...section(log, 'C', '--gate', log.gate('C'))], env);
    await c.waitForStderr('waiting for semaphore');
    expect(log.events()).toEqual(['A start', 'B start', 'B OVERLAP']);

    const held = await inspect(semaphoreKey);
    const [entryA, entryB] = log.entries().filter((entry) => entry.event === 'start');
    expect(held).toMatchObject({ key: semaphoreKey, state: 'held', limit: 2 });
    expect(held.holders.map((holder) => holder.ownerId).sort()).toEqual([entryA?.ownerId, entryB?.ownerId].sort());
    expect(held.holders.map((holder) => [holder.mode, holder.permits])).toEqual([['semaphore', 1], ['semaphore', 1]]);
    const text = await runFencelock(['inspect', '--semaphore', semaphoreKey], env);
    expect(text.stdout).toContain('2 of 2 permits in use');
    // The lock of the same key is another thing: free.
    expect(JSON.parse((await runFencelock(['inspect', semaphoreKey, '--json'], env)).stdout)).toMatchObject({ state: 'free' });

    log.open('A');
    expect((await a.exited).code).toBe(0);
    await c.waitForStdout('ready C');
    expect(log.events().slice(0, 5)).toEqual(['A start', 'B start', 'B OVERLAP', 'A end', 'C start']);
    log.open('B');
    log.open('C');
    expect((await b.exited).code).toBe(0);
    expect((await c.exited).code).toBe(0);
    const tokens = log.entries().filter((entry) => entry.event === 'start').map((entry) => BigInt(entry.token ?? '0'));
    expect(tokens[1]).toBeGreaterThan(tokens[0] ?? 0n);
    expect(tokens[2]).toBeGreaterThan(tokens[1] ?? 0n);
    expect(await inspect(semaphoreKey)).toMatchObject({ state: 'free', holders: [] });
  });

  it('refuses a --permits other than the holders\' with LOCK_LIMIT_MISMATCH (64), and says when no permit is free under --no-wait (75)', async () => {
    const log = newLog();
    const semaphoreKey = key();
    const a = startFencelock(['hold', '--permits', '1', semaphoreKey, '--', ...section(log, 'A', '--gate', log.gate('A'))], env);
    await a.waitForStdout('ready A');
    const mismatch = await runFencelock(['hold', '--permits', '3', semaphoreKey, '--', ...section(log, 'M')], env);
    expect(mismatch.code).toBe(ExitCode.USAGE);
    expect(mismatch.stderr).toContain(`LOCK_LIMIT_MISMATCH: semaphore "${semaphoreKey}" is held with limit 1; this call asked for limit 3`);
    expect(mismatch.stderr).toContain(`fencelock inspect --semaphore ${semaphoreKey}`);
    const full = await runFencelock(['hold', '--permits', '1', '--no-wait', semaphoreKey, '--', ...section(log, 'N')], env);
    expect(full.code).toBe(ExitCode.NOT_ACQUIRED);
    expect(full.stderr).toContain('has not a permit free; the command was not run');
    expect(log.events()).toEqual(['A start']);
    log.open('A');
    expect((await a.exited).code).toBe(0);
  });

  it('takes --take permits at once and tells the command its limit and permits, never an outer hold\'s', async () => {
    const semaphoreKey = key();
    const script = `printf '%s|%s|%s' "$${HOLD_ENV.semaphoreLimit}" "$${HOLD_ENV.semaphorePermits}" "$${HOLD_ENV.token}"`;
    const outer = { ...env, [HOLD_ENV.semaphoreLimit]: '9', [HOLD_ENV.semaphorePermits]: '9' };
    const taken = await runFencelock(['hold', '--permits', '3', '--take', '2', semaphoreKey, '--', 'sh', '-c', script], outer);
    expect(taken.code, taken.stderr).toBe(0);
    const [limit, permits, token] = taken.stdout.split('|');
    expect([limit, permits]).toEqual(['3', '2']);
    expect(token).toMatch(/^[1-9]\d*$/);
    // A lock hold says nothing of a semaphore, even inside one.
    const lock = await runFencelock(['hold', key(), '--', 'sh', '-c', `printf '%s|%s' "\${${HOLD_ENV.semaphoreLimit}-unset}" "\${${HOLD_ENV.semaphorePermits}-unset}"`], outer);
    expect(lock.stdout).toBe('unset|unset');
  });

  it('stops the command when its permit is lost (SIGTERM, then SIGKILL) and exits with 76', async () => {
    const log = newLog();
    const semaphoreKey = key();
    const holder = startFencelock(['hold', '--permits', '2', '--ttl', '1s', '--kill-grace', KILL_GRACE, semaphoreKey, '--', ...section(log, 'A', '--gate', log.gate('never'), '--ignore-term')], env);
    await holder.waitForStdout('ready A');
    // The semaphore's side keys, found by their documented form ({<tag>}fencelock:sem-<kind>:<key>).
    const sideKeys = await client.keys(`*fencelock:sem-*:${semaphoreKey}`);
    expect(sideKeys.length).toBeGreaterThan(0);
    await client.del(...sideKeys);
    expect((await holder.exited).code).toBe(ExitCode.LOCK_LOST);
    expect(log.events()).toEqual(['A start', 'A SIGTERM']);
    expect(holder.stderr()).toContain('LOCK_LOST');
  });
});
