import { parseArgs } from 'node:util';
import { runInventory } from './run-inventory.js';

// The address of `pnpm infra:up`, overridable as in the test suite.
const postgresUrl = process.env.FENCELOCK_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:15432/postgres';

const { values } = parseArgs({
  // `pnpm start -- --table x` passes the `--` through: ignore it.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { table: { type: 'string', default: 'inventory' }, help: { type: 'boolean', default: false } },
});
if (values.help) {
  console.log('usage: pnpm --filter @fencelock/example-postgres-inventory start [--table <name>]');
  console.log('PostgreSQL from FENCELOCK_POSTGRES_URL (default: the server of pnpm infra:up).');
  process.exit(0);
}

try {
  const result = await runInventory({ postgresUrl, table: values.table });
  const exact = result.finalStock === result.initialStock - result.acceptedWrites;
  process.exitCode = exact && result.refusedWrites > 0 ? 0 : 1;
} catch (error) {
  console.error(`\n${error instanceof Error ? error.message : String(error)}`);
  console.error(`Is PostgreSQL (${postgresUrl}) running? Start it with \`pnpm infra:up\`.`);
  process.exitCode = 1;
}
