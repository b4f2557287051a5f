import type { LockCapabilities } from '@fencelock/core';
import { ETCD_CAPABILITIES } from '@fencelock/etcd';
import { POSTGRES_CAPABILITIES } from '@fencelock/postgres';
import { REDIS_CAPABILITIES } from '@fencelock/redis';
import { REDLOCK_CAPABILITIES } from '@fencelock/redlock';
import { ZOOKEEPER_CAPABILITIES } from '@fencelock/zookeeper';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_NAMES, ExitCode, parseCommandLine, runCli, type BackendName } from '../src/index.js';
import { checkCapabilities } from '../src/connect-provider.js';
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

describe('elect and inspect --election, refused before any connection', () => {
  let counters: ConnectionCounters;
  const expectUsage = async (argv: string[], env: Record<string, string>, message: RegExp): Promise<void> => {
    const io = capturedIo(env);
    expect(await runCli(argv, io), argv.join(' ')).toBe(ExitCode.USAGE);
    expect(io.err(), argv.join(' ')).toMatch(message);
    expect(io.err()).toMatch(/\n {2}see: fencelock( elect| hold| inspect)? --help\n$/);
    expect(io.out()).toBe('');
  };

  beforeAll(async () => {
    counters = await connectionCounters(3);
  });
  afterAll(async () => {
    await counters.close();
  });

  it('refuses a bad --value, hold-only flags, a missing name or command', async () => {
    const env = counterEnv(counters, 'etcd');
    await expectUsage(['elect', '--value', 'x'.repeat(1025), 'e', '--', 'true'], env, /--value must be well-formed text of at most 1024 UTF-8 bytes/);
    await expectUsage(['elect', '--value', '\uD800', 'e', '--', 'true'], env, /--value must be well-formed text/);
    await expectUsage(['elect', '--permits', '2', 'e', '--', 'true'], env, /--permits is not an option of "fencelock elect"/);
    await expectUsage(['elect', '--shared', 'e', '--', 'true'], env, /--shared is not an option of "fencelock elect"/);
    await expectUsage(['elect', '--metadata', 'm', 'e', '--', 'true'], env, /--metadata is not an option of "fencelock elect"/);
    await expectUsage(['elect', '--', 'true'], env, /missing the election name/);
    await expectUsage(['elect', 'e'], env, /missing "--" and the command to run, e\.g\. fencelock elect/);
    await expectUsage(['elect', '--wait', 'soon', 'e', '--', 'true'], env, /--wait/);
    await expectUsage(['hold', '--value', 'v', 'k', '--', 'true'], env, /--value is not an option of "fencelock hold"/);
    await expectUsage(['inspect', '--election', '--semaphore', 'e'], env, /either --semaphore or --election/);
    expect(counters.connections()).toBe(0);
  });

  it('waits until elected by default, stands with <hostname>:<pid> unless --value, and takes --wait like hold', () => {
    const env = counterEnv(counters, 'etcd');
    const plain = parseCommandLine(['elect', 'e', '--', 'true'], env);
    expect(plain.kind).toBe('elect');
    if (plain.kind !== 'elect') return;
    expect(plain.settings.waitMs).toBe(Number.POSITIVE_INFINITY);
    expect(plain.settings.election?.value).toMatch(new RegExp(`^.+:${process.pid}$`));
    const bounded = parseCommandLine(['elect', '--wait', '2s', '--value', '', 'e', '--', 'true'], env);
    expect(bounded.kind === 'elect' && [bounded.settings.waitMs, bounded.settings.election?.value]).toEqual([2000, '']);
    const once = parseCommandLine(['elect', '-n', 'e', '--', 'true'], env);
    expect(once.kind === 'elect' && once.settings.waitMs).toBe(0);
    // A hold never campaigns.
    const hold = parseCommandLine(['hold', 'k', '--', 'true'], env);
    expect(hold.kind === 'hold' && hold.settings.election).toBeUndefined();
  });

  it('refuses an election, before connecting, wherever a backend declares none', async () => {
    // Every backend the CLI offers has elections today (Redlock's without terms), so the refusal is
    // checked on each backend's capabilities with elections taken away.
    for (const backend of BACKEND_NAMES) {
      expect(CAPABILITIES[backend].election).not.toBe('none');
      expect(() => checkCapabilities(backend, CAPABILITIES[backend], undefined, undefined, true)).not.toThrow();
      expect(() => checkCapabilities(backend, { ...CAPABILITIES[backend], election: 'none' }, undefined, undefined, true)).toThrow(
        new RegExp(`the ${backend} backend has no leader elections \\(LOCK_UNSUPPORTED\\)`),
      );
      // A hold never asks for elections.
      expect(() => checkCapabilities(backend, { ...CAPABILITIES[backend], election: 'none' }, undefined, undefined, false)).not.toThrow();
    }
    expect(counters.connections()).toBe(0);
  });

  it('documents elect, its variables and inspect --election in help', async () => {
    const elect = capturedIo({});
    expect(await runCli(['elect', '--help'], elect)).toBe(0);
    for (const word of ['fencelock elect <name> [options] -- <command>', '--value <text>', 'FENCELOCK_TERM', 'FENCELOCK_LEADER_VALUE', 'with no time limit', '  75 ', '  76 ']) {
      expect(elect.out()).toContain(word);
    }
    const inspect = capturedIo({});
    expect(await runCli(['help', 'inspect'], inspect)).toBe(0);
    expect(inspect.out()).toContain('--election');
    expect(inspect.out()).toContain('fencelock inspect --election scheduler');
    const global = capturedIo({});
    expect(await runCli(['--help'], global)).toBe(0);
    expect(global.out()).toContain('fencelock elect <name> [options] -- <command> [args…]');
  });
});
