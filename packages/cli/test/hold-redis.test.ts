import { randomUUID } from 'node:crypto';
import { topology, waitFor } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/index.js';
import { CRITICAL_SECTION, KILL_GRACE, killRunningFencelocks, startFencelock } from './support/fencelock-process.js';
import { describeHoldEndToEnd } from './support/hold-suite.js';
import { LockLog } from './support/lock-log.js';
import { openSuiteRedis } from './support/redis-client.js';
import { isRunning } from './support/process-state.js';

// Single Redis: the lock is the plain key itself (the adapter's default prefix is ''), so deleting
// it from outside is exactly the loss an operator's DEL, an eviction or a failover causes.
describeHoldEndToEnd(
  'redis',
  async () => {
    const { env, client, close } = await openSuiteRedis();
    return {
      env,
      shortLifetime: ['--ttl', '1s'],
      removeLock: async (key) => {
        await client.del(key);
      },
      close,
    };
  },
  { fencing: 'per-key', full: true, readWrite: false },
);

// Backend-independent details of stopping the command, on the single Redis.
describe('fencelock hold stops what it started', () => {
  const { redisUrl } = topology();
  const env = { FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: redisUrl };
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  const logs: LockLog[] = [];
  const orphans: number[] = [];
  const section = (log: LockLog, who: string, ...extra: string[]): string[] => [process.execPath, CRITICAL_SECTION, log.path, who, ...extra];
  const readyPid = (output: string, who: string): number => Number(new RegExp(`ready ${who} (\\d+)`).exec(output)?.[1]);

  beforeAll(async () => {
    await client.connect();
  });
  afterEach(async () => {
    await killRunningFencelocks();
    for (const pid of orphans.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    for (const log of logs.splice(0)) log.remove();
  });
  afterAll(() => {
    client.disconnect();
  });

  it('kills the whole process group on loss, also a child the command left behind', async () => {
    const log = new LockLog();
    logs.push(log);
    const key = `cli-group:${randomUUID()}`;
    const quoted = section(log, 'G', '--gate', log.gate('never'), '--ignore-term', '--no-parent-check').map((word) => `'${word}'`).join(' ');
    // The shell dies of SIGTERM; its child ignores SIGTERM and outlives it unless the group is killed.
    const holder = startFencelock(['hold', key, '--ttl', '1s', '--kill-grace', KILL_GRACE, '--', 'sh', '-c', `${quoted}; echo shell-after`], env);
    await holder.waitForStdout('ready G');
    const grandchild = readyPid(holder.stdout(), 'G');
    orphans.push(grandchild);
    await client.del(key);
    expect((await holder.exited).code).toBe(ExitCode.LOCK_LOST);
    await waitFor(async () => (isRunning(grandchild) ? undefined : true), { what: `the command's child ${grandchild} to be killed`, timeoutMs: 15_000 });
    // The shell died of SIGTERM at once; its child still got the grace before the SIGKILL.
    expect(log.events()).toEqual(['G start', 'G SIGTERM']);
    expect(holder.stderr()).toContain('did not stop in time: SIGKILL');
    expect(holder.stdout()).not.toContain('shell-after');
  });

  it('gives what the command left in its group the rest of the grace to clean up, and exits when the group is empty', async () => {
    const log = new LockLog();
    logs.push(log);
    const key = `cli-group-cleanup:${randomUUID()}`;
    const quoted = section(log, 'C', '--gate', log.gate('never'), '--cleanup-ms', '200', '--no-parent-check').map((word) => `'${word}'`).join(' ');
    // A grace far longer than the cleanup: fencelock must not wait for it once the group is empty.
    const holder = startFencelock(['hold', key, '--ttl', '1s', '--kill-grace', '10m', '--', 'sh', '-c', `${quoted}; echo shell-after`], env);
    await holder.waitForStdout('ready C');
    orphans.push(readyPid(holder.stdout(), 'C'));
    await client.del(key);
    expect((await holder.exited).code).toBe(ExitCode.LOCK_LOST);
    expect(log.events()).toEqual(['C start', 'C SIGTERM', 'C cleaned']);
    expect(holder.stderr()).not.toContain('did not stop in time');
  });

  it('with --foreground, still stops the command on loss', async () => {
    const log = new LockLog();
    logs.push(log);
    const key = `cli-foreground:${randomUUID()}`;
    const holder = startFencelock(['hold', key, '--foreground', '--ttl', '1s', '--kill-grace', KILL_GRACE, '--', ...section(log, 'F', '--gate', log.gate('never'), '--ignore-term')], env);
    await holder.waitForStdout('ready F');
    await client.del(key);
    expect((await holder.exited).code).toBe(ExitCode.LOCK_LOST);
    expect(log.events()).toEqual(['F start', 'F SIGTERM']);
  });

  it('ends the hold after --max-hold: the command is stopped, the lock released, exit 76', async () => {
    const log = new LockLog();
    logs.push(log);
    const key = `cli-max-hold:${randomUUID()}`;
    const holder = startFencelock(['hold', key, '--max-hold', '1s', '--', ...section(log, 'M', '--gate', log.gate('never'))], env);
    expect((await holder.exited).code).toBe(ExitCode.LOCK_LOST);
    expect(log.events()).toEqual(['M start', 'M SIGTERM']);
    expect(holder.stderr()).toContain('LOCK_LOST');
    expect(await client.exists(key)).toBe(0);
  });

  it('a key where something else keeps another kind of value: exit 65 (LOCK_KEY_CONFLICT) at once, the command never runs, the value stays', async () => {
    const log = new LockLog();
    logs.push(log);
    const key = `cli-key-conflict:${randomUUID()}`;
    await client.hset(key, 'app', 'data');
    // No --wait bound: a conflict that were retried would never end.
    const holder = startFencelock(['hold', key, '--wait', 'forever', '--', ...section(log, 'K')], env);
    expect((await holder.exited).code).toBe(ExitCode.KEY_CONFLICT);
    expect(holder.stderr()).toContain('LOCK_KEY_CONFLICT');
    expect(holder.stderr()).toContain('hint: something else stores data');
    expect(log.events()).toEqual([]);
    expect(await client.hgetall(key)).toEqual({ app: 'data' });
    await client.del(key);
  });
});
