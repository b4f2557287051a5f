/**
 * `pnpm --filter @fencelock/bench bench:warm-up`: how each subject's uncontended cycle settles as the
 * JIT compiles it (see `warm-up-curve.ts`), each subject in a process of its own started cold, on the
 * shared servers. Prints the table; writes nothing. Settings from the environment: BENCH_SUBJECTS
 * (subject ids, comma-separated; default: the ZooKeeper subjects of scenario 1), BENCH_WINDOWS
 * (default 10), BENCH_WINDOW_CYCLES (default 400), BENCH_SECONDS (the most per subject, default 120).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listSetting, positiveSetting } from './cli-env.js';
import { measureWarmUp, warmUpMarkdown, type WarmUpCurve } from './warm-up-curve.js';
import { subjectById } from './subjects.js';

const DEFAULT_SUBJECTS = ['zookeeper/fencelock', 'zookeeper/protocol-twin', 'zookeeper/raw-recipe'];
const ids = listSetting('BENCH_SUBJECTS');
const options = {
  windows: Math.round(positiveSetting('BENCH_WINDOWS', 10)),
  cyclesPerWindow: Math.round(positiveSetting('BENCH_WINDOW_CYCLES', 400)),
  maxMs: positiveSetting('BENCH_SECONDS', 120) * 1_000,
};
const only = process.env['FENCELOCK_WARM_UP_CHILD'];

if (only !== undefined) {
  // A child: one subject, cold, its curve as JSON on stdout.
  process.stdout.write(JSON.stringify(await measureWarmUp(subjectById(only), options)));
} else {
  const curves: WarmUpCurve[] = [];
  for (const id of (ids.length > 0 ? ids : DEFAULT_SUBJECTS).map((name) => subjectById(name).id)) {
    console.error(`measuring ${id}…`);
    const output = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      env: { ...process.env, FENCELOCK_WARM_UP_CHILD: id },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: options.maxMs + 60_000,
    });
    curves.push(JSON.parse(output) as WarmUpCurve);
  }
  const settings = ['BENCH_SUBJECTS', 'BENCH_WINDOWS', 'BENCH_WINDOW_CYCLES', 'BENCH_SECONDS']
    .filter((name) => process.env[name] !== undefined)
    .map((name) => `${name}=${process.env[name] ?? ''} `)
    .join('');
  console.log(warmUpMarkdown(curves, `${settings}pnpm --filter @fencelock/bench bench:warm-up`).join('\n'));
}
