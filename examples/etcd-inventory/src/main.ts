import { parseArgs } from 'node:util';
import { runInventory } from './run-inventory.js';

// The addresses of `pnpm infra:up`, overridable as in the test suite.
const endpoints = (process.env.FENCELOCK_ETCD_ENDPOINTS ?? 'http://127.0.0.1:2379,http://127.0.0.1:22379,http://127.0.0.1:32379')
  .split(',')
  .map((endpoint) => endpoint.trim());

const { values } = parseArgs({
  // `pnpm start -- --sku x` passes the `--` through: ignore it.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { sku: { type: 'string' }, help: { type: 'boolean', default: false } },
});
if (values.help) {
  console.log('usage: pnpm --filter @fencelock/example-etcd-inventory start [--sku <product>]');
  console.log('etcd endpoints from FENCELOCK_ETCD_ENDPOINTS (default: the cluster of pnpm infra:up).');
  process.exit(0);
}

try {
  const result = await runInventory({ endpoints, sku: values.sku });
  const exact = result.finalStock === result.initialStock - result.acceptedWrites;
  process.exitCode = exact && result.refusedWrites > 0 ? 0 : 1;
} catch (error) {
  console.error(`\n${error instanceof Error ? error.message : String(error)}`);
  console.error(`Is etcd (${endpoints.join(', ')}) running? Start it with \`pnpm infra:up\`.`);
  process.exitCode = 1;
}
