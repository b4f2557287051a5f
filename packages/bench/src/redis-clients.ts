/**
 * The per-client section: for each Redis client library, fencelock through it and the raw lock loop
 * on it, uncontended (one key) and 64 keys in parallel, the two interleaved in rounds (see
 * rounds.ts) so that they share the server's and the machine's state. The ratio fencelock / raw is
 * the median of the per-round ratios: what fencelock itself costs on that client.
 */
import { median } from './rounds.js';
import { runParallelKeysGroup } from './parallel-keys.js';
import type { RedisClientPair } from './subjects-redis-clients.js';
import type { Subject } from './subjects.js';
import type { ThroughputResult } from './rounds.js';
import { runUncontendedGroup } from './uncontended.js';

/** Bounds of the section, per subject and scenario (as `pnpm bench`'s uncontended and 64-key scenarios). */
export interface RedisClientsOptions {
  /** Most measured cycles per subject (uncontended), and per key (64 keys). */
  readonly maxCycles: number;
  /** Most measuring time per subject and scenario, ms. */
  readonly maxMs: number;
  readonly rounds: number;
  /** Keys looped concurrently in the parallel scenario. @default 64 */
  readonly keys?: number;
  /** Unmeasured uncontended cycles first (default: the uncontended scenario's). */
  readonly warmupCycles?: number;
}

/** fencelock and raw on one client in one scenario. */
export interface RedisClientScenario {
  readonly fencelock: ThroughputResult;
  readonly raw: ThroughputResult;
  /** fencelock ops/s ÷ raw ops/s: the median of the per-round ratios. */
  readonly ratio: number;
  /** The smallest and largest per-round ratio. */
  readonly roundRange: { readonly min: number; readonly max: number };
}

/** One client library's figures. */
export interface RedisClientResult {
  /** The library's id (`ioredis5`, `glide`, …). */
  readonly client: string;
  readonly label: string;
  /** Absent when a subject failed (see the run's errors). */
  readonly uncontended?: RedisClientScenario;
  readonly parallelKeys?: RedisClientScenario;
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

function scenario(results: readonly ThroughputResult[], pair: RedisClientPair): RedisClientScenario | undefined {
  const fencelock = results.find((result) => result.subject === pair.fencelock.id);
  const raw = results.find((result) => result.subject === pair.raw.id);
  if (fencelock === undefined || raw === undefined) return undefined;
  const perRound = fencelock.roundOpsPerSec.map((ours, index) => ours / (raw.roundOpsPerSec[index] ?? Number.NaN)).filter(Number.isFinite);
  return {
    fencelock,
    raw,
    ratio: round(median(perRound), 3),
    roundRange: { min: round(Math.min(...perRound), 3), max: round(Math.max(...perRound), 3) },
  };
}

/** Runs the section over `pairs`, one library after the other; failures go to `onError`. */
export async function runRedisClients(
  pairs: readonly RedisClientPair[],
  options: RedisClientsOptions,
  onError: (subject: Subject, error: unknown) => void,
  log: (line: string) => void = () => undefined,
): Promise<RedisClientResult[]> {
  const results: RedisClientResult[] = [];
  for (const pair of pairs) {
    const group = [pair.fencelock, pair.raw];
    const uncontended = scenario(
      await runUncontendedGroup(group, { maxCycles: options.maxCycles, maxMs: options.maxMs, rounds: options.rounds, ...(options.warmupCycles === undefined ? {} : { warmupCycles: options.warmupCycles }) }, onError),
      pair,
    );
    const parallelKeys = scenario(
      await runParallelKeysGroup(group, { keys: options.keys ?? 64, maxCyclesPerKey: options.maxCycles, maxMs: options.maxMs, rounds: options.rounds }, onError),
      pair,
    );
    const result: RedisClientResult = { client: pair.library.id, label: pair.library.label, ...(uncontended === undefined ? {} : { uncontended }), ...(parallelKeys === undefined ? {} : { parallelKeys }) };
    results.push(result);
    log(
      `${pair.library.label}: uncontended ${uncontended?.fencelock.opsPerSec ?? '—'} / ${uncontended?.raw.opsPerSec ?? '—'} ops/s (${uncontended?.ratio ?? '—'}), ` +
        `64 keys ${parallelKeys?.fencelock.opsPerSec ?? '—'} / ${parallelKeys?.raw.opsPerSec ?? '—'} ops/s (${parallelKeys?.ratio ?? '—'})`,
    );
  }
  return results;
}

const fmt = (value: number | undefined, digits: number): string => (value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits));
const range = (scenario: RedisClientScenario | undefined): string => (scenario === undefined ? '—' : `${fmt(scenario.roundRange.min, 2)}–${fmt(scenario.roundRange.max, 2)}`);

/** The section's table, as markdown lines. */
export function redisClientsMarkdown(results: readonly RedisClientResult[], command: string): string[] {
  return [
    '## 1c. Per Redis client: fencelock beside the raw lock loop on the same client',
    '',
    'For each client library `@fencelock/redis` accepts, fencelock through it (`autoExtend: false`, 10 s TTL)',
    'and the raw loop on a client of the same library (`SET key owner PX ttl NX`, then a Lua compare-and-delete',
    'by `EVAL`), interleaved in rounds on the shared Redis. The ratio fencelock / raw (median of the per-round',
    'ratios, range beside it) is what fencelock itself costs on that client; the raw figures compare the clients.',
    `Command: \`${command}\`.`,
    '',
    '| client | uncontended fencelock ops/s | raw ops/s | ratio | range | fencelock p50 ms | raw p50 ms | 64 keys fencelock ops/s | raw ops/s | ratio | range |',
    '|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|',
    ...results.map((r) => {
      const u = r.uncontended;
      const p = r.parallelKeys;
      return (
        `| ${r.label} | ${fmt(u?.fencelock.opsPerSec, 0)} | ${fmt(u?.raw.opsPerSec, 0)} | ${fmt(u?.ratio, 2)} | ${range(u)} | ${fmt(u?.fencelock.p50Ms, 2)} | ${fmt(u?.raw.p50Ms, 2)} ` +
        `| ${fmt(p?.fencelock.opsPerSec, 0)} | ${fmt(p?.raw.opsPerSec, 0)} | ${fmt(p?.ratio, 2)} | ${range(p)} |`
      );
    }),
    '',
  ];
}

/** The command that ran the section, with the settings given in the environment (`NAME=value … command`). */
export function redisClientsCommand(command: string, environment: NodeJS.ProcessEnv, names: readonly string[]): string {
  const given = names.filter((name) => environment[name] !== undefined).map((name) => `${name}=${environment[name]}`);
  return [...given, command].join(' ');
}
