/**
 * `pnpm chaos`: a seeded soak per backend, then the table backend × fault → operations,
 * acquisitions, violations, stale writes rejected by the fence, max loss-signal latency.
 *
 *   pnpm chaos [--backend redis|etcd|zookeeper|redlock|all] [--seconds 60] [--seed N] [--faults F1,F2] [--clients 3]
 *              [--markdown] [--out DIR] [--time-axis client|receipt]
 *
 * `--seconds` is the workload time per backend, split over its faults (at least 10 s each). Exit
 * code 1 when a run did not end as expected (a violation on a safe configuration, none on a negative
 * control, or a harness error); its seed and the replay command are printed.
 */
import { parseArgs } from 'node:util';
import { type SummaryRow, renderSummaryTable } from '@fencelock/history-checker';
import { BACKEND_NAMES, type BackendName, isBackendName } from './backends.js';
import { randomSeed } from './rng.js';
import type { RunOutcome } from './run.js';
import { soakBackend } from './soak.js';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'all' },
      seconds: { type: 'string', default: '60' },
      seed: { type: 'string' },
      faults: { type: 'string' },
      clients: { type: 'string', default: '3' },
      markdown: { type: 'boolean', default: false },
      out: { type: 'string' },
      'time-axis': { type: 'string', default: 'client' },
    },
    strict: true,
  });
  const backends: BackendName[] = values.backend === 'all' ? [...BACKEND_NAMES] : (values.backend ?? '').split(',').filter(isBackendName);
  if (backends.length === 0) throw new RangeError(`--backend must be one of ${BACKEND_NAMES.join(', ')} or all`);
  const seconds = Number(values.seconds);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3_600) throw new RangeError('--seconds must be in (0, 3600]');
  const clients = Number(values.clients);
  if (!Number.isInteger(clients) || clients < 3 || clients > 5) throw new RangeError('--clients must be 3, 4 or 5');
  const seed = values.seed === undefined ? randomSeed() : Number(values.seed);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError('--seed must be a non-negative integer');
  const timeAxis = values['time-axis'];
  if (timeAxis !== 'client' && timeAxis !== 'receipt') throw new RangeError('--time-axis must be client or receipt');
  const faults = values.faults?.split(',').map((id) => id.trim().toUpperCase());
  console.log(`chaos seed ${seed} (replay with --seed ${seed}); backends ${backends.join(', ')}; ${seconds} s each`);

  const outcomes: RunOutcome[] = [];
  for (const backend of backends) {
    outcomes.push(
      ...(await soakBackend({
        backend,
        seed,
        seconds,
        clients,
        timeAxis,
        ...(faults === undefined ? {} : { faults }),
        ...(values.out === undefined ? {} : { dir: values.out }),
        log: (line) => console.log(line),
      })),
    );
  }
  const rows: SummaryRow[] = outcomes.map((outcome) => outcome.row);
  console.log('');
  console.log(renderSummaryTable(rows));
  if (values.markdown) {
    console.log('');
    console.log(renderSummaryTable(rows, { format: 'markdown' }));
  }
  const failed = outcomes.filter((outcome) => !outcome.passed);
  console.log('');
  if (failed.length === 0) {
    console.log(`all ${outcomes.length} runs ended as expected (seed ${seed})`);
    return 0;
  }
  for (const outcome of failed) {
    console.log(`FAILED ${outcome.backend} ${outcome.scenario.id}: seed ${seed} (run seed ${outcome.seed}), history ${outcome.historyPath}`);
  }
  return 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  },
);
