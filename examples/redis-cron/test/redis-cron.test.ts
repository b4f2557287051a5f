import { isChildOfThisProcess, killChildLeftovers, topology } from '@fencelock/test-infra';
import { afterEach, describe, expect, it } from 'vitest';
import { previousDays, runCron, type CronTick } from '../src/run-cron.js';

// Worker process ids of the current test.
const started: number[] = [];
afterEach(() => killChildLeftovers(started.splice(0)));

describe('redis-cron example', () => {
  it('N ticks fired at three worker processes: exactly N reports, each built by one worker under an extended lock', async () => {
    const [d1 = '', d2 = '', d3 = '', d4 = ''] = previousDays(4);
    const ticks: CronTick[] = [
      { date: d1, mode: 'try' },
      { date: d2, mode: 'wait' },
      { date: d3, mode: 'try' },
      { date: d4, mode: 'wait' },
    ];
    const lines: string[] = [];
    const result = await runCron({
      redisUrl: topology().redisUrl,
      ticks,
      workers: 3,
      print: (line) => lines.push(line),
      onWorkerStarted: (pid) => started.push(pid),
    });

    // The published reports, read back from Redis: one per tick, none twice.
    expect(result.published.map((report) => report.date)).toEqual(ticks.map((tick) => tick.date));
    for (const tick of ticks) {
      const forTick = result.reports.filter((report) => report.date === tick.date);
      expect(forTick).toHaveLength(3);
      const runs = forTick.filter((report) => report.outcome === 'ran');
      expect(runs).toHaveLength(1);
      const run = runs[0]!;
      expect(result.published.find((report) => report.date === tick.date)?.worker).toBe(run.worker);
      // The job (1.5 s) outlives the TTL (1 s): only automatic extension kept the lock.
      expect(run.extensions).toBeGreaterThanOrEqual(1);
      expect(BigInt(run.fencingToken ?? '0')).toBeGreaterThan(0n);

      // The late worker fires after the run finished: the done marker stops it.
      const late = forTick.find((report) => report.worker === 'worker-3');
      expect(late).toMatchObject({ outcome: 'done-already', tookLock: false, doneBy: run.worker });

      const loser = forTick.find((report) => report.worker !== run.worker && report.worker !== 'worker-3');
      if (tick.mode === 'wait') expect(loser).toMatchObject({ outcome: 'done-already', doneBy: run.worker });
      else expect(['busy', 'done-already']).toContain(loser?.outcome);
    }
    // With acquire, the loser waited out the run and got the lock: only the re-check under the lock
    // stopped a second run. (Either wait tick suffices, in case a starved loser started after the run.)
    const waitLosers = result.reports.filter((report) => report.mode === 'wait' && report.worker !== 'worker-3' && report.outcome !== 'ran');
    expect(waitLosers.some((report) => report.tookLock === true)).toBe(true);
    // Every worker process is gone once runCron returns.
    expect(started).toHaveLength(3);
    expect(started.filter(isChildOfThisProcess)).toEqual([]);
    expect(lines.at(-1)).toContain('4 ticks -> 4 reports published');
  });
});
