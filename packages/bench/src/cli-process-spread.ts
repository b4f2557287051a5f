/**
 * `pnpm --filter @fencelock/bench bench:process-spread`: the same subjects measured in several
 * processes, one after the other, each in interleaved rounds (see `process-spread.ts`), on the shared
 * servers (`pnpm infra:up`); prints the first subject's ratio to each other one, per process. Settings
 * from the environment: BENCH_SUBJECTS (subject ids, comma-separated, ours first; default fencelock,
 * its protocol twin and node-redlock on one Redis), BENCH_PROCESSES (default 5), BENCH_ROUNDS (per
 * process, default 8), BENCH_CYCLES (per subject per round, default 1000), BENCH_WARMUP (cycles per
 * subject before the rounds, default 2000). Writes nothing.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listSetting, nonNegativeSetting, positiveSetting } from './cli-env.js';
import { measureInThisProcess, spreadMarkdown, summarizeSpread, type SubjectCosts } from './process-spread.js';
import { subjectById } from './subjects.js';

const DEFAULT_SUBJECTS = ['redis/fencelock', 'redis/protocol-twin', 'redis/node-redlock'];
const ids = listSetting('BENCH_SUBJECTS');
const subjects = (ids.length > 0 ? ids : DEFAULT_SUBJECTS).map((id) => subjectById(id));
const options = {
  rounds: Math.round(positiveSetting('BENCH_ROUNDS', 8)),
  cyclesPerRound: Math.round(positiveSetting('BENCH_CYCLES', 1_000)),
  warmupCycles: Math.round(nonNegativeSetting('BENCH_WARMUP', 2_000)),
  maxSliceMs: 20_000,
};

if (process.env['FENCELOCK_SPREAD_CHILD'] === '1') {
  process.stdout.write(JSON.stringify(await measureInThisProcess(subjects, options)));
} else {
  const processes = Math.round(positiveSetting('BENCH_PROCESSES', 5));
  // Each child: its warm-up and its rounds, every slice bounded.
  const childTimeoutMs = (options.rounds + 1) * subjects.length * options.maxSliceMs + 60_000;
  const perProcess: SubjectCosts[][] = [];
  for (let index = 0; index < processes; index += 1) {
    console.error(`process ${index + 1} of ${processes}…`);
    const output = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      env: { ...process.env, FENCELOCK_SPREAD_CHILD: '1' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: childTimeoutMs,
    });
    perProcess.push(JSON.parse(output) as SubjectCosts[]);
  }
  const settings = ['BENCH_SUBJECTS', 'BENCH_PROCESSES', 'BENCH_ROUNDS', 'BENCH_CYCLES', 'BENCH_WARMUP']
    .filter((name) => process.env[name] !== undefined)
    .map((name) => `${name}=${process.env[name] ?? ''} `)
    .join('');
  console.log(spreadMarkdown(summarizeSpread(perProcess), `${settings}pnpm --filter @fencelock/bench bench:process-spread`).join('\n'));
}
