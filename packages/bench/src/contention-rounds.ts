/**
 * Rounds of the stress section's contention part. One contention run of a few seconds swings by
 * ±10 % from one run to the next on a shared 2-core machine, more than the gaps the targets judge;
 * so every implementation runs several times, the order rotated per round (A B C, B C A, …), and a
 * target compares the median of per-round ratios, as the throughput sections do.
 */
import type { ContentionResult } from './contention.js';
import { median, type RoundRange } from './rounds.js';

/** Whether a measurement ran on a quiet machine or while CPU hogs spun. */
export type Load = 'quiet' | 'loaded';

/** One contention run of the stress section. */
export type ContentionRound = ContentionResult & { readonly load: Load; readonly round: number };

/** A contention result of the stress section: the median round of one implementation under one load. */
export type StressContentionResult = ContentionResult & {
  readonly load: Load;
  /** acq/s of every round, in round order (one entry where the section ran one round). */
  readonly roundsAcquisitionsPerSec?: readonly number[];
};

/** `list` rotated left by `by` places: round r of a rotation starts with the r-th item. */
export function rotated<T>(list: readonly T[], by: number): T[] {
  if (list.length === 0) return [];
  const start = ((by % list.length) + list.length) % list.length;
  return [...list.slice(start), ...list.slice(0, start)];
}

/**
 * One row per implementation and load, in the order first run: the round whose acq/s is the median
 * (the lower middle one for an even count), whole, so that its hand-off percentiles, shares and
 * per-client counts belong to one run, with every round's acq/s beside it.
 */
export function medianRounds(rounds: readonly ContentionRound[]): StressContentionResult[] {
  const groups = new Map<string, ContentionRound[]>();
  for (const result of rounds) {
    const id = `${result.load} ${result.subject}`;
    const group = groups.get(id);
    if (group === undefined) groups.set(id, [result]);
    else group.push(result);
  }
  return [...groups.values()].map((group) => {
    const byRound = [...group].sort((a, b) => a.round - b.round);
    const byRate = [...group].sort((a, b) => a.acquisitionsPerSec - b.acquisitionsPerSec);
    const { round: _round, ...middle } = byRate[Math.floor((byRate.length - 1) / 2)] as ContentionRound;
    return { ...middle, roundsAcquisitionsPerSec: byRound.map((r) => r.acquisitionsPerSec) };
  });
}

/** A ratio over rounds: the median of the per-round ratios, with their range and how many rounds had one. */
export interface RoundRatio extends RoundRange {
  readonly median: number;
}

/**
 * `subject`'s acq/s over the best peer's of the same round (backend and load), per round; the median
 * of those ratios. NaN (with 0 rounds) when no round ran both the subject and a peer.
 */
export function ratioToBestPeer(rounds: readonly ContentionRound[], subject: string, load: Load): RoundRatio {
  const ratios: number[] = [];
  const ofSubject = rounds.filter((r) => r.subject === subject && r.load === load);
  for (const ours of ofSubject) {
    const peers = rounds.filter((r) => r.kind === 'peer' && r.backend === ours.backend && r.load === load && r.round === ours.round);
    const best = Math.max(...peers.map((r) => r.acquisitionsPerSec));
    if (peers.length > 0 && best > 0) ratios.push(ours.acquisitionsPerSec / best);
  }
  if (ratios.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, rounds: 0 };
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), rounds: ratios.length };
}
