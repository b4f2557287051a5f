import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode, HOLD_ENV, type InspectElectionJson } from '../../src/index.js';
import { CRITICAL_SECTION, KILL_GRACE, killRunningFencelocks, runFencelock, startFencelock } from './fencelock-process.js';
import { LockLog } from './lock-log.js';

/** What the elect suite needs of a backend. */
export interface ElectBackend {
  /** Variables that select the backend and its address. */
  readonly env: Record<string, string>;
  /** Flags that make a lost session noticed soon (a short `--ttl`). */
  readonly shortLifetime: readonly string[];
  /** Takes the leadership of the election `name` away from its leader from outside, as an operator could. */
  removeLeader(name: string): Promise<void>;
  /** Closes the suite's own client. */
  close(): Promise<void>;
}

/**
 * `fencelock elect` end to end on one backend: real processes, the fixture's log for what ran when,
 * and the backend itself for a loss. The command is `sh -c` printing the election variables, then
 * exec'ing the critical-section fixture (same pid), so the test reads both.
 */
export function describeElectEndToEnd(backend: string, open: () => Promise<ElectBackend>): void {
  describe(`fencelock elect on ${backend}, end to end`, () => {
    let server: ElectBackend;
    const logs: LockLog[] = [];
    const newLog = (): LockLog => {
      const log = new LockLog();
      logs.push(log);
      return log;
    };
    const name = (): string => `cli-elect:${randomUUID()}`;
    const leading = (log: LockLog, who: string, ...extra: string[]): string[] => [
      'sh',
      '-c',
      `echo "elected ${who} term=$${HOLD_ENV.term} value=$${HOLD_ENV.leaderValue} token=$${HOLD_ENV.token} key=$${HOLD_ENV.key}"; exec "$@"`,
      'sh',
      process.execPath,
      CRITICAL_SECTION,
      log.path,
      who,
      ...extra,
    ];
    /** The variables the command of `who` printed. */
    const printed = (stdout: string, who: string): Record<string, string> => {
      const line = stdout.split('\n').find((text) => text.startsWith(`elected ${who} `)) ?? '';
      return Object.fromEntries(line.split(' ').slice(2).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
    };
    const leader = async (election: string): Promise<InspectElectionJson> => {
      const result = await runFencelock(['inspect', '--election', election, '--json'], server.env);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as InspectElectionJson;
    };

    beforeAll(async () => {
      server = await open();
    });
    afterEach(async () => {
      await killRunningFencelocks();
      for (const log of logs.splice(0)) log.remove();
    });
    afterAll(async () => {
      await server.close();
    });

    it('runs the first campaigner\'s command; the second waits, and runs once the first exits, with a greater term', async () => {
      const log = newLog();
      const election = name();
      const a = startFencelock(['elect', '--value', 'host-a:1', election, '--', ...leading(log, 'A', '--gate', log.gate('A'), '--exit', '3')], server.env);
      await a.waitForStdout('ready A');
      const b = startFencelock(['elect', '--verbose', '--value', 'host-b:2', election, '--', ...leading(log, 'B', '--gate', log.gate('B'))], server.env);
      await b.waitForStderr('waiting for election');
      // No --wait: the standby waits with no time limit.
      expect(b.stderr()).toContain('with no time limit');
      // Bounded campaigns give up while A leads: 75, their commands not run.
      const once = await runFencelock(['elect', '--no-wait', election, '--', ...leading(log, 'C')], server.env);
      expect(once.code, once.stderr).toBe(ExitCode.NOT_ACQUIRED);
      expect(once.stderr).toContain(`election ${JSON.stringify(election)} has another leader`);
      const bounded = await runFencelock(['elect', '--wait', '200ms', election, '--', ...leading(log, 'D')], server.env);
      expect(bounded.code, bounded.stderr).toBe(ExitCode.NOT_ACQUIRED);
      expect(bounded.stderr).toContain('fencelock inspect --election');
      expect(log.events()).toEqual(['A start']);

      const varsA = printed(a.stdout(), 'A');
      expect(varsA.value).toBe('host-a:1');
      expect(varsA.key).toBe(election);
      expect(varsA.term).toMatch(/^\d+$/);
      // The term is the leadership's fencing token.
      expect(varsA.token).toBe(varsA.term);
      // The standby says who leads while it waits.
      await b.waitForStderr(`led by "host-a:1", term ${varsA.term}`);
      expect(await leader(election)).toEqual({ name: election, backend, state: 'led', value: 'host-a:1', term: varsA.term });

      // A's command exits with 3: fencelock passes it on and resigns, so B is elected.
      log.open('A');
      expect((await a.exited).code).toBe(3);
      await b.waitForStdout('ready B');
      expect(log.events()).toEqual(['A start', 'A end', 'B start']);
      const varsB = printed(b.stdout(), 'B');
      expect(varsB.value).toBe('host-b:2');
      expect(BigInt(varsB.term ?? '0')).toBeGreaterThan(BigInt(varsA.term ?? '0'));
      expect(await leader(election)).toMatchObject({ state: 'led', value: 'host-b:2', term: varsB.term });

      log.open('B');
      expect((await b.exited).code).toBe(0);
      const none = await runFencelock(['inspect', '--election', election], server.env);
      expect(none.stdout.startsWith(`election ${JSON.stringify(election)} has no leader (`)).toBe(true);
      expect(JSON.parse((await runFencelock(['inspect', '--election', election, '--json'], server.env)).stdout)).toEqual({ name: election, backend, state: 'none', value: null, term: null });
    });

    it('stops the command with SIGTERM and exits 76 when leadership is lost', async () => {
      const log = newLog();
      const election = name();
      const a = startFencelock(['elect', ...server.shortLifetime, '--kill-grace', KILL_GRACE, election, '--', ...leading(log, 'A', '--gate', log.gate('A'))], server.env);
      await a.waitForStdout('ready A');
      await server.removeLeader(election);
      const { code } = await a.exited;
      expect(code, a.stderr()).toBe(ExitCode.LOCK_LOST);
      expect(log.events()).toEqual(['A start', 'A SIGTERM']);
      expect(a.stderr()).toContain('LOCK_LOST');
      expect(a.stderr()).toContain('stopping the command (SIGTERM');
    });
  });
}
