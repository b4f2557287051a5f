/**
 * The rounds of the stress section's contention part: the order of each round, the median round
 * that stands for an implementation, and the per-round ratio the targets judge. No servers, no timing.
 */
import { describe, expect, it } from 'vitest';
import { medianRounds, ratioToBestPeer, rotated, type ContentionRound, type Load } from '../src/contention-rounds.js';
import { contentionRatioMarkdown, stressTargets } from '../src/report.js';
import type { StressResults } from '../src/stress.js';
import type { Backend, SubjectKind } from '../src/subjects.js';

const run = (backend: Backend, name: string, kind: SubjectKind, load: Load, round: number, acquisitionsPerSec: number, perClient = [1, 2, 3, 4]): ContentionRound => ({
  subject: `${backend}/${name}`,
  backend,
  kind,
  label: `${backend} ${name}`,
  load,
  round,
  clients: 4,
  acquisitions: 100,
  seconds: 1,
  acquisitionsPerSec,
  handoffP50Ms: acquisitionsPerSec / 100,
  handoffP90Ms: 2,
  handoffP99Ms: 3,
  handoffMaxMs: 4,
  handoffs: 90,
  differentClientShare: 0.9,
  waiterWinShare: 0.95,
  maxWaitMs: 10,
  perClient,
  failures: round,
  clientCpuPerAcquisitionUs: 500,
  warmupAcquisitions: 0,
});

describe('contention rounds', () => {
  it('rotate the order by one place per round', () => {
    expect(rotated(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(rotated(['a', 'b', 'c'], 1)).toEqual(['b', 'c', 'a']);
    expect(rotated(['a', 'b', 'c'], 5)).toEqual(['c', 'a', 'b']);
    expect(rotated([], 2)).toEqual([]);
  });

  it('stand for an implementation by its median round, whole, with every round beside it', () => {
    const rows = medianRounds([
      run('redis', 'fencelock', 'fencelock', 'quiet', 0, 300, [9, 9, 9, 9]),
      run('redis', 'fencelock', 'fencelock', 'quiet', 1, 100, [8, 8, 8, 8]),
      run('redis', 'fencelock', 'fencelock', 'quiet', 2, 200, [7, 7, 7, 7]),
      run('redis', 'fencelock', 'fencelock', 'loaded', 0, 50),
    ]);
    expect(rows).toHaveLength(2);
    const [quiet, loaded] = rows;
    // The median round's own figures, not a mix of rounds.
    expect(quiet).toMatchObject({ load: 'quiet', acquisitionsPerSec: 200, handoffP50Ms: 2, perClient: [7, 7, 7, 7], failures: 2, roundsAcquisitionsPerSec: [300, 100, 200] });
    expect(quiet).not.toHaveProperty('round');
    expect(loaded).toMatchObject({ load: 'loaded', acquisitionsPerSec: 50, roundsAcquisitionsPerSec: [50] });
    // An even count takes the lower middle round.
    expect(medianRounds([run('redis', 'x', 'raw', 'quiet', 0, 10), run('redis', 'x', 'raw', 'quiet', 1, 40)])[0]?.acquisitionsPerSec).toBe(10);
  });

  it('judge against the best peer of the same round: the median of per-round ratios', () => {
    // Per round, ours ÷ the better peer of that round: 100/200 = 0.5, 300/150 = 2, 250/200 = 1.25.
    // The median rows alone (ours 250, peers' medians 200 and 150) would say 1.25 too, so round 2 makes them differ:
    // its better peer is node-redlock.
    const rounds = [
      run('redis', 'fencelock', 'fencelock', 'quiet', 0, 100),
      run('redis', 'node-redlock', 'peer', 'quiet', 0, 50),
      run('redis', 'redis-semaphore', 'peer', 'quiet', 0, 200),
      run('redis', 'fencelock', 'fencelock', 'quiet', 1, 300),
      run('redis', 'node-redlock', 'peer', 'quiet', 1, 150),
      run('redis', 'redis-semaphore', 'peer', 'quiet', 1, 100),
      run('redis', 'fencelock', 'fencelock', 'quiet', 2, 250),
      run('redis', 'node-redlock', 'peer', 'quiet', 2, 400),
      run('redis', 'redis-semaphore', 'peer', 'quiet', 2, 200),
      // Another backend's peers and another load are not compared.
      run('redlock', 'node-redlock', 'peer', 'quiet', 0, 1),
      run('redis', 'redis-semaphore', 'peer', 'loaded', 0, 1),
    ];
    expect(ratioToBestPeer(rounds, 'redis/fencelock', 'quiet')).toEqual({ median: 0.625, min: 0.5, max: 2, rounds: 3 });
    expect(ratioToBestPeer(rounds, 'redis/fencelock', 'loaded').rounds).toBe(0);
    expect(ratioToBestPeer(rounds, 'redis/fencelock', 'loaded').median).toBeNaN();

    const results: StressResults = { settings: { contentionRounds: 3 }, command: 'pnpm bench', herd: [], heldLocks: [], contention: medianRounds(rounds), contentionRounds: rounds, hogRuns: [] };
    const check = stressTargets(results).find((c) => c.target.startsWith('Redis contention, quiet: acq/s'));
    expect(check).toMatchObject({ measured: 0.625, met: false });
    expect(check?.target).toContain('median of the rounds');
    const table = contentionRatioMarkdown(results).join('\n');
    expect(table).toContain('| redis | redis fencelock | quiet | 0.63 | 0.50–2.00 (3) |');
    expect(table).not.toContain('node-redlock |');
  });

  it('leave a run without rounds judged by its one ratio', () => {
    const contention = [
      { ...run('redis', 'fencelock', 'fencelock', 'quiet', 0, 300), round: undefined },
      { ...run('redis', 'redis-semaphore', 'peer', 'quiet', 0, 200), round: undefined },
    ];
    const results: StressResults = { settings: {}, command: 'pnpm bench', herd: [], heldLocks: [], contention, hogRuns: [] };
    expect(stressTargets(results).find((c) => c.target.startsWith('Redis contention, quiet: acq/s'))).toMatchObject({ measured: 1.5, met: true });
    expect(contentionRatioMarkdown(results)).toEqual([]);
  });
});
