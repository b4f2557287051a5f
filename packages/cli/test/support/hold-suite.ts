import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode, HOLD_ENV, type InspectJson } from '../../src/index.js';
import { CRITICAL_SECTION, KILL_GRACE, killRunningFencelocks, runFencelock, startFencelock } from './fencelock-process.js';
import { LockLog } from './lock-log.js';

/** A backend the end-to-end suite runs `fencelock` against, with outside powers over its locks. */
export interface BackendUnderTest {
  /** The FENCELOCK_* variables that point fencelock at it. */
  readonly env: Record<string, string>;
  /** `hold` flags that make a loss noticed quickly (a short TTL or session). */
  readonly shortLifetime: readonly string[];
  /** Deletes the lock's data for `key` behind fencelock's back, with the backend's own client. */
  removeLock(key: string): Promise<void>;
  /** Closes the test's own clients. */
  close(): Promise<void>;
  /**
   * Configuration warnings the test server rightly causes (settings made for speed, such as
   * PostgreSQL's `fsync=off`): their `fencelock: warning:` lines are not counted as output.
   */
  readonly expectedWarnings?: RegExp;
}

/** Options of {@link describeHoldEndToEnd}. */
export interface HoldSuiteOptions {
  /** The fencing strength the command should be told (FENCELOCK_FENCING); `none`: no FENCELOCK_TOKEN at all. */
  readonly fencing: 'global' | 'per-key' | 'none';
  /** Run the cases that need more processes (signals, three contenders). */
  readonly full: boolean;
  /** The backend has shared (read) locks: `--shared` holders run together. */
  readonly readWrite: boolean;
}

/**
 * The end-to-end behaviour of `fencelock hold` and `inspect` on one backend, with real processes:
 * the bin, and the fixture command whose log shows what ran when.
 */
export function describeHoldEndToEnd(name: string, connect: () => Promise<BackendUnderTest>, options: HoldSuiteOptions): void {
  describe(`fencelock on ${name}, end to end`, () => {
    let backend: BackendUnderTest;
    const logs: LockLog[] = [];
    const newLog = (): LockLog => {
      const log = new LockLog();
      logs.push(log);
      return log;
    };
    const key = (): string => `cli-e2e:${name}:${randomUUID()}`;
    const section = (log: LockLog, who: string, ...extra: string[]): string[] => [process.execPath, CRITICAL_SECTION, log.path, who, ...extra];
    const fencelock = (args: readonly string[]) => startFencelock(args, backend.env);
    const inspect = async (lockKey: string): Promise<InspectJson> => {
      const result = await runFencelock(['inspect', lockKey, '--json'], backend.env);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as InspectJson;
    };

    beforeAll(async () => {
      backend = await connect();
    });
    afterEach(async () => {
      await killRunningFencelocks();
      for (const log of logs.splice(0)) log.remove();
    });
    afterAll(async () => {
      await backend?.close();
    });

    it(`runs two holders of one key one after the other${options.fencing === 'none' ? ' (no tokens)' : ', the second with a greater fencing token'}`, async () => {
      const log = newLog();
      const lockKey = key();
      const first = fencelock(['hold', lockKey, '--', ...section(log, 'A', '--gate', log.gate('A'))]);
      await first.waitForStdout('ready A');
      const second = fencelock(['hold', lockKey, '--verbose', '--wait', '60s', '--', ...section(log, 'B', '--gate', log.gate('B'))]);
      await second.waitForStderr('waiting for lock');
      // B is waiting while A is inside: A alone has started.
      expect(log.events()).toEqual(['A start']);
      log.open('A');
      expect((await first.exited).code).toBe(0);
      await second.waitForStdout('ready B');
      log.open('B');
      expect((await second.exited).code).toBe(0);

      expect(log.events()).toEqual(['A start', 'A end', 'B start', 'B end']);
      const [a, , b] = log.entries();
      expect(a?.key).toBe(lockKey);
      if (options.fencing === 'none') expect([a?.token, b?.token]).toEqual([undefined, undefined]);
      else expect(BigInt(b?.token ?? '0')).toBeGreaterThan(BigInt(a?.token ?? 'x'));
      expect(a?.ownerId).not.toBe(b?.ownerId);
      // Without --verbose and without a terminal, a successful hold says nothing on stderr.
      const unexpected = first
        .stderr()
        .split('\n')
        .filter((line) => line !== '' && !(backend.expectedWarnings?.test(line) === true && line.startsWith('fencelock: warning: ')));
      expect(unexpected).toEqual([]);
    });

    it('passes the key, the owner id and the fencing token to the command, as inspect shows them, and inspect says "free" after', async () => {
      const log = newLog();
      const lockKey = key();
      const holder = fencelock(['hold', lockKey, '--metadata', 'nightly report', '--', ...section(log, 'A', '--gate', log.gate('A'))]);
      await holder.waitForStdout('ready A');
      const held = await inspect(lockKey);
      const [entry] = log.entries();
      expect(held.state).toBe('held');
      expect(held.holders).toHaveLength(1);
      expect(held.holders[0]).toMatchObject({ ownerId: entry?.ownerId, fencingToken: entry?.token ?? null, mode: 'exclusive', metadata: 'nightly report' });
      expect(entry?.token === undefined).toBe(options.fencing === 'none');
      const text = await runFencelock(['inspect', lockKey], backend.env);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain(entry?.token ?? 'none');
      expect(text.stdout).toContain(entry?.ownerId ?? 'no owner');
      expect(text.stdout).toContain('nightly report');

      log.open('A');
      expect((await holder.exited).code).toBe(0);
      const free = await inspect(lockKey);
      expect(free).toMatchObject({ key: lockKey, state: 'free', holders: [] });
      expect((await runFencelock(['inspect', lockKey], backend.env)).stdout).toContain('is free');
    });

    it('exits with the command\'s status, and fails at once with 75 (or --conflict-exit-code) under --no-wait / --wait 0 while the key is held', async () => {
      const log = newLog();
      const lockKey = key();
      const failing = await runFencelock(['hold', lockKey, '--', ...section(log, 'X', '--exit', '7')], backend.env);
      expect(failing.code).toBe(7);

      const holder = fencelock(['hold', lockKey, '--', ...section(log, 'A', '--gate', log.gate('A'))]);
      await holder.waitForStdout('ready A');
      const noWait = await runFencelock(['hold', lockKey, '--no-wait', '--', ...section(log, 'B')], backend.env);
      expect(noWait.code).toBe(ExitCode.NOT_ACQUIRED);
      const waitZero = await runFencelock(['hold', lockKey, '--wait', '0', '--conflict-exit-code', '9', '--', ...section(log, 'C')], backend.env);
      expect(waitZero.code).toBe(9);
      // Neither command ran.
      expect(log.events()).toEqual(['X start', 'X end', 'A start']);
      log.open('A');
      expect((await holder.exited).code).toBe(0);
    });

    it('stops the command when the lock is lost (SIGTERM, then SIGKILL after --kill-grace) and exits with 76', async () => {
      const log = newLog();
      const lockKey = key();
      const holder = fencelock([
        'hold', lockKey, ...backend.shortLifetime, '--kill-grace', KILL_GRACE, '--',
        ...section(log, 'A', '--gate', log.gate('never'), '--ignore-term'),
      ]);
      await holder.waitForStdout('ready A');
      await backend.removeLock(lockKey);
      const { code } = await holder.exited;
      expect(code).toBe(ExitCode.LOCK_LOST);
      // It got SIGTERM, ignored it, and never left its section: SIGKILL ended it.
      expect(log.events()).toEqual(['A start', 'A SIGTERM']);
      expect(holder.stderr()).toContain('LOCK_LOST');
    });

    it(`tells the command its fencing strength (${options.fencing}) and its own token, never an outer one`, async () => {
      // An outer `fencelock hold` (or a user) may have set FENCELOCK_TOKEN: it must not reach this command.
      const script = `printf '%s|%s' "$${HOLD_ENV.fencing}" "\${${HOLD_ENV.token}-unset}"`;
      const result = await runFencelock(['hold', key(), '--', 'sh', '-c', script], { ...backend.env, [HOLD_ENV.token]: '12345' });
      expect(result.code).toBe(0);
      const [fencing, token] = result.stdout.split('|');
      expect(fencing).toBe(options.fencing);
      if (options.fencing === 'none') expect(token).toBe('unset');
      else expect(token).toMatch(/^[1-9]\d*$/);
      expect(token).not.toBe('12345');
    });

    if (options.readWrite) {
      it('lets --shared holders run together, and makes an exclusive holder wait for them', async () => {
        const log = newLog();
        const lockKey = key();
        const reader = fencelock(['hold', lockKey, '--shared', '--', ...section(log, 'R1', '--gate', log.gate('R1'))]);
        await reader.waitForStdout('ready R1');
        // A second reader gets in and out while the first is still inside.
        const second = await runFencelock(['hold', lockKey, '--shared', '--no-wait', '--', ...section(log, 'R2')], backend.env);
        expect(second.code).toBe(0);
        const writer = fencelock(['hold', lockKey, '--verbose', '--wait', '60s', '--', ...section(log, 'W')]);
        await writer.waitForStderr('waiting for lock');
        expect((await inspect(lockKey)).holders.map((holder) => holder.mode)).toEqual(['shared']);
        log.open('R1');
        expect((await reader.exited).code).toBe(0);
        expect((await writer.exited).code).toBe(0);
        // R2's whole section happened inside R1's (an overlap the marker file reports), W's after both.
        expect(log.events()).toEqual(['R1 start', 'R2 start', 'R2 OVERLAP', 'R2 end', 'R1 end', 'W start', 'W end']);
      });
    } else {
      it('refuses --shared with 64 (LOCK_UNSUPPORTED), without running the command', async () => {
        const log = newLog();
        const result = await runFencelock(['hold', key(), '--shared', '--', ...section(log, 'S')], backend.env);
        expect(result.code).toBe(ExitCode.USAGE);
        expect(result.stderr).toContain('LOCK_UNSUPPORTED');
        expect(log.events()).toEqual([]);
      });
    }

    if (!options.full) return;

    it('never lets three contenders overlap, and hands the lock on with increasing tokens', async () => {
      const log = newLog();
      const lockKey = key();
      const runs = ['A', 'B', 'C'].map((who) => runFencelock(['hold', lockKey, '--wait', '60s', '--', ...section(log, who, '--busy-ms', '200')], backend.env));
      const results = await Promise.all(runs);
      expect(results.map((result) => result.code)).toEqual([0, 0, 0]);
      const entries = log.entries();
      expect(entries.map((entry) => entry.event)).toEqual(['start', 'end', 'start', 'end', 'start', 'end']);
      for (let index = 0; index < entries.length; index += 2) expect(entries[index + 1]?.name).toBe(entries[index]?.name);
      const tokens = entries.filter((entry) => entry.event === 'start').map((entry) => BigInt(entry.token ?? '0'));
      expect(tokens[1]).toBeGreaterThan(tokens[0] ?? 0n);
      expect(tokens[2]).toBeGreaterThan(tokens[1] ?? 0n);
    });

    it('forwards SIGINT to the command, exits with its status and releases the lock', async () => {
      const log = newLog();
      const lockKey = key();
      const holder = fencelock(['hold', lockKey, '--', ...section(log, 'A', '--gate', log.gate('never'))]);
      await holder.waitForStdout('ready A');
      holder.child.kill('SIGINT');
      expect((await holder.exited).code).toBe(130);
      expect(log.events()).toEqual(['A start', 'A SIGINT']);
      expect((await inspect(lockKey)).state).toBe('free');
    });

    it('stops waiting on SIGTERM with 143, without running the command', async () => {
      const log = newLog();
      const lockKey = key();
      const holder = fencelock(['hold', lockKey, '--', ...section(log, 'A', '--gate', log.gate('A'))]);
      await holder.waitForStdout('ready A');
      const waiter = fencelock(['hold', lockKey, '--verbose', '--wait', 'forever', '--', ...section(log, 'B')]);
      await waiter.waitForStderr('waiting for lock');
      waiter.child.kill('SIGTERM');
      expect((await waiter.exited).code).toBe(143);
      log.open('A');
      expect((await holder.exited).code).toBe(0);
      expect(log.events()).toEqual(['A start', 'A end']);
    });

    it('gives up after --wait with 75, and reports a command ended by a signal as 128 + n', async () => {
      const log = newLog();
      const lockKey = key();
      const holder = fencelock(['hold', lockKey, '--', ...section(log, 'A', '--gate', log.gate('A'))]);
      await holder.waitForStdout('ready A');
      const waiter = await runFencelock(['hold', lockKey, '--wait', '300ms', '--', ...section(log, 'B')], backend.env);
      expect(waiter.code).toBe(ExitCode.NOT_ACQUIRED);
      expect(waiter.stderr).toContain('LOCK_TIMEOUT');
      log.open('A');
      expect((await holder.exited).code).toBe(0);

      const killed = await runFencelock(['hold', lockKey, '--', process.execPath, '-e', "process.kill(process.pid, 'SIGTERM')"], backend.env);
      expect(killed.code).toBe(143);
      const missing = await runFencelock(['hold', lockKey, '--', 'fencelock-test-no-such-command'], backend.env);
      expect(missing.code).toBe(ExitCode.COMMAND_NOT_FOUND);
    });
  });
}
