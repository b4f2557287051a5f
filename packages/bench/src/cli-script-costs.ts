/**
 * `pnpm --filter @fencelock/bench bench:script-costs`: what each part of `@fencelock/redis`'s
 * protocol costs the server (see `script-costs.ts`), on the shared Redis. Prints the table; writes
 * nothing. Bounds from the environment: BENCH_CYCLES (cycles per step per round, default 5000),
 * BENCH_ROUNDS (default 8).
 */
import { sharedAddresses } from './bench-servers.js';
import { positiveSetting } from './cli-env.js';
import { runScriptCosts, scriptCostsMarkdown } from './script-costs.js';

const cyclesPerRound = Math.round(positiveSetting('BENCH_CYCLES', 5_000));
const rounds = Math.round(positiveSetting('BENCH_ROUNDS', 8));
const results = await runScriptCosts(sharedAddresses().redisUrl, { cyclesPerRound, rounds });
const settings = [process.env['BENCH_CYCLES'] === undefined ? '' : `BENCH_CYCLES=${cyclesPerRound} `, process.env['BENCH_ROUNDS'] === undefined ? '' : `BENCH_ROUNDS=${rounds} `].join('');
console.log(scriptCostsMarkdown(results, `${settings}pnpm --filter @fencelock/bench bench:script-costs`).join('\n'));
if (results.some((result) => !result.everyCycleAcquired)) {
  console.log('\nA step did not acquire on every cycle (another client holds the key?): its figure is not a cycle’s.');
  process.exitCode = 1;
}
