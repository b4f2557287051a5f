import { isChildOfThisProcess, killChildLeftovers, topology } from '@fencelock/test-infra';
import { afterEach, describe, expect, it } from 'vitest';
import { runElection } from '../src/run-election.js';

// Worker process ids of the current test.
const started: number[] = [];
afterEach(() => killChildLeftovers(started.splice(0)));

describe('zookeeper-leader example', () => {
  it('a killed leader and a frozen leader are each replaced by another worker with a larger token, never two at once, and the frozen leader\'s late write is refused by its term', async () => {
    const lines: string[] = [];
    const result = await runElection({
      connectionString: topology().zkConnectionString,
      print: (line) => lines.push(line),
      onWorkerStarted: (pid) => started.push(pid),
    });

    expect(result.failures).toEqual([]);
    // Followers were stopped before the last leader: exactly three terms.
    expect(result.terms).toHaveLength(3);
    const [killed, frozen, last] = result.terms;
    expect(killed).toMatchObject({ end: 'killed' });
    expect(frozen).toMatchObject({ end: 'LOCK_LOST' });
    expect(last).toMatchObject({ end: 'released' });
    expect(frozen!.worker).not.toBe(killed!.worker);
    expect(last!.worker).not.toBe(frozen!.worker);
    expect(last!.worker).not.toBe(killed!.worker);
    expect(frozen!.token).toBeGreaterThan(killed!.token);
    expect(last!.token).toBeGreaterThan(frozen!.token);
    for (const term of result.terms) expect(term.rounds).toBeGreaterThanOrEqual(3);
    // Every leader's work began after the previous leader's last round: no overlap, in token order.
    expect(result.violations).toEqual([]);
    // The frozen leader's job finished after it was deposed: its write reached the store with its old
    // term after the next leader's, and the fence refused it (and only it).
    expect(result.store.refused).toEqual([expect.objectContaining({ worker: frozen!.worker, term: frozen!.token, highest: last!.token })]);
    const acceptedTerms = result.store.accepted.map((write) => write.term);
    expect(acceptedTerms).toEqual([...acceptedTerms].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(new Set(acceptedTerms)).toEqual(new Set([killed!.token, frozen!.token, last!.token]));
    expect(started).toHaveLength(3);
    expect(started.filter(isChildOfThisProcess)).toEqual([]);
  });
});
