/**
 * `pnpm --filter @fencelock/bench bench:script-costs`: what each part of `@fencelock/redis`'s and
 * `@fencelock/redlock`'s protocols costs the server (see `script-costs.ts`), on the shared Redis.
 * Prints the tables; writes nothing. Bounds from the environment: BENCH_CYCLES (cycles per step per
 * round, default 5000), BENCH_ROUNDS (default 8).
 */
import { sharedAddresses } from './bench-servers.js';
import { positiveSetting } from './cli-env.js';
import { redlockScriptCostSteps, runScriptCosts, scriptCostsMarkdown } from './script-costs.js';

const cyclesPerRound = Math.round(positiveSetting('BENCH_CYCLES', 5_000));
const rounds = Math.round(positiveSetting('BENCH_ROUNDS', 8));
const { redisUrl } = sharedAddresses();
const results = await runScriptCosts(redisUrl, { cyclesPerRound, rounds });
const redlockResults = await runScriptCosts(redisUrl, { cyclesPerRound, rounds }, await redlockScriptCostSteps());
const settings = [process.env['BENCH_CYCLES'] === undefined ? '' : `BENCH_CYCLES=${cyclesPerRound} `, process.env['BENCH_ROUNDS'] === undefined ? '' : `BENCH_ROUNDS=${rounds} `].join('');
const command = `${settings}pnpm --filter @fencelock/bench bench:script-costs`;
console.log(scriptCostsMarkdown(results, command).join('\n'));
console.log('');
console.log(scriptCostsMarkdown(redlockResults, command, 'Server µs per uncontended acquire + release on one Redlock master (a cycle sends the same to every master)').join('\n'));
if ([...results, ...redlockResults].some((result) => !result.everyCycleAcquired)) {
  console.log('\nA step did not acquire on every cycle (another client holds the key?): its figure is not a cycle’s.');
  process.exitCode = 1;
}
