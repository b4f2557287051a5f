/**
 * `pnpm --filter @fencelock/bench bench:contention`: the contention scenario alone (client processes
 * on one key, as in section 2 of `pnpm bench`), on the shared servers, with its warm-up and window
 * chosen from the environment, so that a steady state can be measured beside the full run's short
 * windows. Prints one line per run; writes nothing. Bounds, from the environment:
 * - BENCH_ONLY: comma-separated subject-id substrings (default: the Redis and Redlock subjects that wait);
 * - BENCH_SECONDS: the measured window, default 3; BENCH_CONTENTION_WARMUP_SECONDS: how long the
 *   processes contend before it opens, default 1 (as in `pnpm bench`);
 * - BENCH_CONTENTION_ROUNDS: runs of each subject, in a rotated order each round, default 1;
 * - BENCH_CLIENTS: contending processes, default 4; BENCH_CYCLES: most acquisitions per process,
 *   default 1,000,000; BENCH_HOGS: CPU hog processes during every run, default 0 (quiet).
 */
import { CONTENTION_WARMUP_MS, runContention } from './contention.js';
import { idFilter, nonNegativeSetting, positiveSetting } from './cli-env.js';
import { underCpuLoad } from './cpu-hogs.js';
import { subjects } from './subjects.js';

const windowMs = positiveSetting('BENCH_SECONDS', 3) * 1000;
const warmupMs = nonNegativeSetting('BENCH_CONTENTION_WARMUP_SECONDS', CONTENTION_WARMUP_MS / 1000) * 1000;
const rounds = Math.round(positiveSetting('BENCH_CONTENTION_ROUNDS', 1));
const clients = Math.round(positiveSetting('BENCH_CLIENTS', 4));
const maxAcquisitionsPerClient = Math.round(positiveSetting('BENCH_CYCLES', 1_000_000));
const hogs = Math.round(nonNegativeSetting('BENCH_HOGS', 0));
const only = idFilter('BENCH_ONLY');
const chosen = subjects().filter((subject) =>
  only.all ? subject.waits && (subject.backend === 'redis' || subject.backend === 'redlock') : only.matches(subject.id),
);
if (chosen.length === 0) throw new RangeError(`BENCH_ONLY=${process.env['BENCH_ONLY'] ?? ''} names no subject`);

console.log(`contention: ${clients} processes, ${warmupMs / 1000} s of warm-up, ${windowMs / 1000} s measured, ${hogs} CPU hogs, ${rounds} round(s)`);
let failed = false;
for (let round = 0; round < rounds; round += 1) {
  const order = chosen.map((_, i) => chosen[(i + round) % chosen.length]!);
  for (const subject of order) {
    const run = () => runContention(subject, { clients, maxMs: windowMs, maxAcquisitionsPerClient, warmupMs });
    try {
      const result = hogs > 0 ? (await underCpuLoad(hogs, warmupMs + 2 * windowMs + 30_000, run)).result : await run();
      console.log(
        [
          subject.id.padEnd(40),
          `${result.acquisitionsPerSec.toFixed(1).padStart(7)} acq/s`,
          `${(result.waiterWinShare * 100).toFixed(0).padStart(3)} % to waiters`,
          `client CPU ${result.clientCpuPerAcquisitionUs.toFixed(0).padStart(5)} µs/acq`,
          `per client ${result.perClient.join(' / ')}`,
          `failed waits ${result.failures}`,
        ].join('  '),
      );
    } catch (cause) {
      failed = true;
      console.log(`${subject.id}: FAILED ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}`);
    }
  }
}
if (failed) process.exitCode = 1;
