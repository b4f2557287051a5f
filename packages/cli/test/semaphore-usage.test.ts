import type { LockCapabilities } from '@fencelock/core';
import { ETCD_CAPABILITIES } from '@fencelock/etcd';
import { POSTGRES_CAPABILITIES } from '@fencelock/postgres';
import { REDIS_CAPABILITIES } from '@fencelock/redis';
import { REDLOCK_CAPABILITIES } from '@fencelock/redlock';
import { ZOOKEEPER_CAPABILITIES } from '@fencelock/zookeeper';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_NAMES, ExitCode, runCli, type BackendName } from '../src/index.js';
import { capturedIo } from './support/captured-io.js';
import { connectionCounters, counterEnv, type ConnectionCounters } from './support/connection-counters.js';

/** What each backend declares: the refusals below follow it, not a list of backends. */
const CAPABILITIES: Readonly<Record<BackendName, LockCapabilities>> = {
  redis: REDIS_CAPABILITIES,
  redlock: REDLOCK_CAPABILITIES,
  etcd: ETCD_CAPABILITIES,
  zookeeper: ZOOKEEPER_CAPABILITIES,
  postgres: POSTGRES_CAPABILITIES,
};

describe('hold --permits and inspect --semaphore, refused before any connection', () => {
  let counters: ConnectionCounters;
  const envFor = (backend: BackendName): Record<string, string> => counterEnv(counters, backend);
  const expectUsage = async (argv: string[], env: Record<string, string>, message: RegExp): Promise<void> => {
    const io = capturedIo(env);
    expect(await runCli(argv, io), argv.join(' ')).toBe(ExitCode.USAGE);
    expect(io.err(), argv.join(' ')).toMatch(message);
    expect(io.err()).toMatch(/\n {2}see: fencelock( hold| inspect)? --help\n$/);
    expect(io.out()).toBe('');
  };

  beforeAll(async () => {
    counters = await connectionCounters(3);
  });
  afterAll(async () => {
    await counters.close();
  });

  it('refuses bad --permits and --take values, and --take or --shared beside --permits', async () => {
    const env = envFor('redis');
    await expectUsage(['hold', '--permits', '0', 'k', '--', 'true'], env, /--permits must be an integer from 1 to \d+, got 0/);
    await expectUsage(['hold', '--permits', '2.5', 'k', '--', 'true'], env, /--permits must be a whole number, got "2\.5"/);
    await expectUsage(['hold', '--permits', '99999999999', 'k', '--', 'true'], env, /--permits must be a whole number/);
    await expectUsage(['hold', '--permits', '2', '--take', '3', 'k', '--', 'true'], env, /--take must be an integer from 1 to 2, got 3/);
    await expectUsage(['hold', '--take', '2', 'k', '--', 'true'], env, /--take needs --permits/);
    await expectUsage(['hold', '--permits', '2', '--shared', 'k', '--', 'true'], env, /either --shared .* or --permits/);
    await expectUsage(['inspect', '--permits', '2', 'k'], env, /--permits is not an option of "fencelock inspect"/);
    await expectUsage(['hold', '--semaphore', 'k', '--', 'true'], env, /--semaphore is not an option of "fencelock hold"/);
    expect(counters.connections()).toBe(0);
  });

  it('refuses a semaphore on every backend that declares none, and --take above 1 where permits come one at a time', async () => {
    let refusals = 0;
    for (const backend of BACKEND_NAMES) {
      const support = CAPABILITIES[backend].semaphore;
      const env = envFor(backend);
      if (support === 'none') {
        const message = new RegExp(`the ${backend} backend has no counting semaphores \\(LOCK_UNSUPPORTED\\)`);
        await expectUsage(['hold', '--permits', '2', 'k', '--', 'true'], env, message);
        await expectUsage(['inspect', '--semaphore', 'k'], env, message);
        refusals += 2;
      } else if (support === 'single-permit') {
        await expectUsage(['hold', '--permits', '3', '--take', '2', 'k', '--', 'true'], env, new RegExp(`the ${backend} backend takes one semaphore permit at a time`));
        refusals += 1;
      }
    }
    // Redlock has no semaphore (its quorum of independent masters could not count permits safely).
    expect(CAPABILITIES.redlock.semaphore).toBe('none');
    expect(refusals).toBeGreaterThan(0);
    expect(counters.connections()).toBe(0);
  });

  it('documents --permits, --take, --semaphore and the semaphore variables in help', async () => {
    const hold = capturedIo({});
    expect(await runCli(['hold', '--help'], hold)).toBe(0);
    for (const word of ['--permits <n>', '--take <k>', 'FENCELOCK_SEMAPHORE_LIMIT', 'FENCELOCK_SEMAPHORE_PERMITS', 'LOCK_LIMIT_MISMATCH', 'fencelock hold --permits 3']) {
      expect(hold.out()).toContain(word);
    }
    const inspect = capturedIo({});
    expect(await runCli(['help', 'inspect'], inspect)).toBe(0);
    expect(inspect.out()).toContain('--semaphore');
    expect(inspect.out()).toContain('fencelock inspect --semaphore exports');
  });
});
