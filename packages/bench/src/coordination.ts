/**
 * The coordination section: each primitive's subjects (fencelock and the peers on the same server)
 * uncontended — one caller, take and give back in a loop — and contended — {@link CONTENDERS} callers
 * in one process looping on one key, each holding for a millisecond — interleaved in rounds (see
 * rounds.ts). The contended loop also counts holders that overlap: more than the group's limit at
 * once is a safety violation, reported, never a figure.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoordinationGroup } from './subjects-coordination.js';
import { median, runInterleaved, throughputResult, type SliceRunner, type ThroughputResult } from './rounds.js';
import type { Subject } from './subjects.js';
import { runUncontendedGroup } from './uncontended.js';

/** Callers of the contended loop. */
export const CONTENDERS = 8;
/** How long each contended holder keeps its permit, ms. */
const HOLD_MS = 1;
/** The longest wait of one contended acquire, ms. */
const CONTENDED_WAIT_MS = 5_000;

/** Bounds of the section, per subject and scenario. */
export interface CoordinationOptions {
  readonly maxCycles: number;
  readonly maxMs: number;
  readonly rounds: number;
  /** Unmeasured uncontended cycles first (default: the uncontended scenario's). */
  readonly warmupCycles?: number;
}

/** A contended subject's figures. */
export interface ContendedResult extends ThroughputResult {
  /** The most holders seen at once; above the group's limit is a violation. */
  readonly mostHolders: number;
  /** Acquires that failed or timed out. */
  readonly failures: number;
}

/** One subject's figures in the section. */
export interface CoordinationSubjectResult {
  readonly subject: string;
  readonly label: string;
  readonly kind: Subject['kind'];
  readonly uncontended?: ThroughputResult;
  readonly contended?: ContendedResult;
  /** fencelock ÷ this subject (peers only): median of the per-round ratios. */
  readonly uncontendedRatio?: number;
  readonly contendedRatio?: number;
}

/** One group's figures. */
export interface CoordinationResult {
  readonly primitive: CoordinationGroup['primitive'];
  readonly backend: string;
  readonly limit: number;
  readonly subjects: readonly CoordinationSubjectResult[];
}

function ratio(ours: ThroughputResult | undefined, theirs: ThroughputResult | undefined): number | undefined {
  if (ours === undefined || theirs === undefined) return undefined;
  const perRound = ours.roundOpsPerSec.map((value, index) => value / (theirs.roundOpsPerSec[index] ?? Number.NaN)).filter(Number.isFinite);
  return perRound.length === 0 ? undefined : Number(median(perRound).toFixed(3));
}

/** Opens `subject` for contended slices: {@link CONTENDERS} loops on one key of its own. */
async function openContended(subject: Subject, counts: { most: number; failures: number }): Promise<SliceRunner> {
  const session = await subject.open();
  const key = `contended:${randomUUID()}`;
  let holders = 0;
  return {
    async slice(maxMs, maxCycles) {
      const samples: number[] = [];
      const deadline = performance.now() + maxMs;
      const loop = async (): Promise<void> => {
        while (samples.length < maxCycles && performance.now() < deadline) {
          const t0 = performance.now();
          let release: () => Promise<void>;
          try {
            release = await session.lock(key, CONTENDED_WAIT_MS);
          } catch {
            counts.failures += 1;
            continue;
          }
          holders += 1;
          counts.most = Math.max(counts.most, holders);
          await sleep(HOLD_MS);
          holders -= 1;
          await release();
          samples.push(performance.now() - t0);
        }
      };
      await Promise.all(Array.from({ length: CONTENDERS }, loop));
      return samples;
    },
    close: () => session.close(),
  };
}

/** Runs the section over `groups`, one after the other; failures go to `onError`. */
export async function runCoordination(
  groups: readonly CoordinationGroup[],
  options: CoordinationOptions,
  onError: (subject: Subject, error: unknown) => void,
  log: (line: string) => void = () => undefined,
): Promise<CoordinationResult[]> {
  const results: CoordinationResult[] = [];
  for (const group of groups) {
    const uncontended = await runUncontendedGroup(
      group.subjects,
      { maxCycles: options.maxCycles, maxMs: options.maxMs, rounds: options.rounds, ...(options.warmupCycles === undefined ? {} : { warmupCycles: options.warmupCycles }) },
      onError,
    );
    const counts = new Map(group.subjects.map((subject) => [subject.id, { most: 0, failures: 0 }]));
    const contended = (
      await runInterleaved(
        group.subjects,
        (subject) => openContended(subject, counts.get(subject.id)!),
        { rounds: options.rounds, sliceMs: options.maxMs / options.rounds, maxCyclesPerSlice: Math.max(1, Math.floor(options.maxCycles / options.rounds)) },
        onError,
      )
    ).map((measurement): ContendedResult => {
      const count = counts.get(measurement.subject.id)!;
      return { ...throughputResult(measurement), mostHolders: count.most, failures: count.failures };
    });
    const ours = group.subjects.find((subject) => subject.kind === 'fencelock');
    const oursUncontended = uncontended.find((result) => result.subject === ours?.id);
    const oursContended = contended.find((result) => result.subject === ours?.id);
    const subjects = group.subjects.map((subject): CoordinationSubjectResult => {
      const u = uncontended.find((result) => result.subject === subject.id);
      const c = contended.find((result) => result.subject === subject.id);
      const peer = subject.kind !== 'fencelock';
      const uRatio = peer ? ratio(oursUncontended, u) : undefined;
      const cRatio = peer ? ratio(oursContended, c) : undefined;
      return {
        subject: subject.id, label: subject.label, kind: subject.kind,
        ...(u === undefined ? {} : { uncontended: u }),
        ...(c === undefined ? {} : { contended: c }),
        ...(uRatio === undefined ? {} : { uncontendedRatio: uRatio }),
        ...(cRatio === undefined ? {} : { contendedRatio: cRatio }),
      };
    });
    results.push({ primitive: group.primitive, backend: group.backend, limit: group.limit, subjects });
    for (const s of subjects) {
      log(
        `${group.primitive} ${group.backend} ${s.label}: uncontended ${s.uncontended?.opsPerSec ?? '—'} ops/s, contended ${s.contended?.opsPerSec ?? '—'} ops/s ` +
          `(most holders ${s.contended?.mostHolders ?? '—'} of ${group.limit}, failures ${s.contended?.failures ?? '—'})`,
      );
    }
  }
  return results;
}

const fmt = (value: number | undefined, digits: number): string => (value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits));

/** The section's table, as markdown lines. */
export function coordinationMarkdown(results: readonly CoordinationResult[], command: string): string[] {
  return [
    '## 1d. Semaphores and elections beside the libraries users would otherwise pick',
    '',
    'Uncontended: one caller takes a permit of a semaphore (and gives it back), or campaigns and wins an election (and',
    `resigns), in a loop. Contended: ${CONTENDERS} callers in one process loop on one key, each holding for ${HOLD_MS} ms. Semaphore`,
    "subjects' TTL is 10 s with no renewal, election subjects' session or lease 10 s; subjects of a",
    'group are interleaved in rounds on the same server. "ours ÷ theirs" is the median of the per-round ratios (> 1: fencelock is faster).',
    '"most holders" is the most that held at once in the contended loop: above the limit would be a safety violation.',
    `Command: \`${command}\`.`,
    '',
    '| primitive | backend | subject | uncontended ops/s | p50 ms | ours ÷ theirs | contended ops/s | ours ÷ theirs | most holders / limit | failed waits |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...results.flatMap((group) =>
      group.subjects.map(
        (s) =>
          `| ${group.primitive} | ${group.backend} | ${s.label} | ${fmt(s.uncontended?.opsPerSec, 0)} | ${fmt(s.uncontended?.p50Ms, 2)} | ${fmt(s.uncontendedRatio, 2)} ` +
          `| ${fmt(s.contended?.opsPerSec, 0)} | ${fmt(s.contendedRatio, 2)} | ${s.contended?.mostHolders ?? '—'} / ${group.limit} | ${s.contended?.failures ?? '—'} |`,
      ),
    ),
    '',
  ];
}
