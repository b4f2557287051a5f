/**
 * `pnpm --filter @fencelock/bench bench:coordination`: the semaphores-and-elections section alone
 * (fencelock beside redis-semaphore and the other peers), on the shared servers. Prints the table and
 * writes bench-results/coordination.json; docs/BENCHMARKS.md is written by full runs only. Bounds,
 * from the environment, as in `pnpm bench`: BENCH_SECONDS (default 3), BENCH_ROUNDS (default 5),
 * BENCH_CYCLES (default 20000); BENCH_ONLY: comma-separated subject-id substrings.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sharedAddresses } from './bench-servers.js';
import { coordinationMarkdown, runCoordination } from './coordination.js';
import { idFilter, positiveSetting } from './cli-env.js';
import { redisClientsCommand } from './redis-clients.js';
import { coordinationGroups } from './subjects-coordination.js';

const settings = { maxMs: positiveSetting('BENCH_SECONDS', 3) * 1000, rounds: Math.round(positiveSetting('BENCH_ROUNDS', 5)), maxCycles: positiveSetting('BENCH_CYCLES', 20_000) };
const only = idFilter('BENCH_ONLY');
const errors: Record<string, string> = {};
const startedAt = new Date().toISOString();
const groups = coordinationGroups(sharedAddresses())
  .map((group) => ({ ...group, subjects: group.subjects.filter((subject) => only.matches(subject.id)) }))
  .filter((group) => group.subjects.length > 0);
const results = await runCoordination(
  groups,
  settings,
  (subject, cause) => {
    errors[subject.id] = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    console.log(`${subject.id}: FAILED ${errors[subject.id]}`);
  },
  (line) => console.log(line),
);
const command = redisClientsCommand('pnpm --filter @fencelock/bench bench:coordination', process.env, ['BENCH_SECONDS', 'BENCH_ROUNDS', 'BENCH_CYCLES', 'BENCH_ONLY']);
const path = new URL('../bench-results/coordination.json', import.meta.url);
await mkdir(new URL('./', path), { recursive: true });
await writeFile(path, `${JSON.stringify({ startedAt, settings, results, errors }, null, 2)}\n`);
console.log(`\n${coordinationMarkdown(results, command).join('\n')}\nwrote ${fileURLToPath(path)}`);
const violations = results.flatMap((group) => group.subjects.filter((s) => (s.contended?.mostHolders ?? 0) > group.limit).map((s) => s.subject));
if (violations.length > 0) console.log(`SAFETY: more holders than the limit at once: ${violations.join(', ')}`);
if (Object.keys(errors).length > 0 || violations.length > 0) process.exitCode = 1;
