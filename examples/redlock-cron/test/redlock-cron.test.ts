import { isChildOfThisProcess, killChildLeftovers, startRedisMasters, topology, type RedisServer } from '@fencelock/test-infra';
import { afterEach, describe, expect, it } from 'vitest';
import type { TickReport } from '../src/protocol.js';
import { previousDays, runCron, type CronTick } from '../src/run-cron.js';

// Worker process ids and dedicated servers of the current test.
const started: number[] = [];
const servers: RedisServer[] = [];
afterEach(async () => {
  killChildLeftovers(started.splice(0));
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

function onlyRun(reports: readonly TickReport[], date: string): TickReport {
  const runs = reports.filter((report) => report.date === date && report.outcome === 'ran');
  expect(runs).toHaveLength(1);
  return runs[0]!;
}

describe('redlock-cron example', () => {
  it('N ticks on the shared masters: N reports; the frozen winner\'s late write is refused by the idempotency record', async () => {
    const [d1 = '', d2 = '', d3 = ''] = previousDays(3);
    const ticks: CronTick[] = [
      { date: d1, mode: 'try' },
      { date: d2, mode: 'wait' },
      { date: d3, mode: 'try', pauseWinner: true },
    ];
    const lines: string[] = [];
    const result = await runCron({
      masters: topology().redlockUrls,
      ticks,
      print: (line) => lines.push(line),
      onWorkerStarted: (pid) => started.push(pid),
    });

    expect(result.written.map((report) => report.date)).toEqual([d1, d2, d3]);
    for (const tick of ticks.slice(0, 2)) {
      const run = onlyRun(result.reports, tick.date);
      expect(run.extensions).toBeGreaterThanOrEqual(1); // a 1.5 s job under a 1 s TTL
      expect(result.written.find((report) => report.date === tick.date)?.worker).toBe(run.worker);
      const late = result.reports.find((report) => report.date === tick.date && report.worker === 'worker-3');
      expect(late).toMatchObject({ outcome: 'done-already', tookLock: false, writtenBy: run.worker });
    }
    // d2 was fired with acquire: the loser waited for the lock, or (if it started late) saw the report; it never ran.
    const d2Loser = result.reports.find((report) => report.date === d2 && report.worker !== 'worker-3' && report.outcome !== 'ran');
    expect(d2Loser).toMatchObject({ outcome: 'done-already' });

    // d3: the frozen winner lost its lock; the late worker took it and wrote; the frozen worker's
    // write came after and was refused — by the record, not by the lock.
    const lateRun = onlyRun(result.reports, d3);
    expect(lateRun.worker).toBe('worker-3');
    const refused = result.reports.filter((report) => report.date === d3 && report.outcome === 'duplicate-refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ heldAtWrite: false, writtenBy: 'worker-3' });
    expect(result.written.find((report) => report.date === d3)?.worker).toBe('worker-3');

    expect(started).toHaveLength(3);
    expect(started.filter(isChildOfThisProcess)).toEqual([]);
    expect(lines.at(-1)).toContain('1 duplicate write(s) refused by the idempotency record');
  });

  it('keeps running one report per tick after one of five dedicated masters is killed', async () => {
    const masters = await startRedisMasters(5);
    servers.push(...masters);
    const [d1 = '', d2 = '', d3 = ''] = previousDays(3);
    const ticks: CronTick[] = [d1, d2, d3].map((date) => ({ date, mode: 'try' }));
    const lines: string[] = [];
    const result = await runCron({
      masters: masters.map((master) => master.url),
      ticks,
      print: (line) => lines.push(line),
      onWorkerStarted: (pid) => started.push(pid),
      beforeTick: async (index) => {
        if (index === 1) await masters[0]!.kill();
      },
    });

    expect(masters[0]!.running).toBe(false);
    expect(result.written.map((report) => report.date)).toEqual([d1, d2, d3]);
    for (const tick of ticks) {
      const run = onlyRun(result.reports, tick.date);
      expect(result.written.find((report) => report.date === tick.date)?.worker).toBe(run.worker);
    }
    expect(started.filter(isChildOfThisProcess)).toEqual([]);
  });
});
