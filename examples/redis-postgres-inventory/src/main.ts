import { parseArgs } from 'node:util';
import { runInventory } from './run-inventory.js';

// The addresses of `pnpm infra:up`, overridable as in the test suite.
const redisUrl = process.env.FENCELOCK_REDIS_URL ?? 'redis://127.0.0.1:6379';
const postgresUrl = process.env.FENCELOCK_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:15432/postgres';

const { values } = parseArgs({
  // `pnpm start -- --table x` passes the `--` through: ignore it.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { table: { type: 'string', default: 'inventory' }, help: { type: 'boolean', default: false } },
});
if (values.help) {
  console.log('usage: pnpm --filter @fencelock/example-redis-postgres-inventory start [--table <name>]');
  console.log('Redis and PostgreSQL from FENCELOCK_REDIS_URL and FENCELOCK_POSTGRES_URL (defaults: pnpm infra:up).');
  process.exit(0);
}

try {
  const result = await runInventory({ redisUrl, postgresUrl, table: values.table });
  const exact = result.finalStock === result.initialStock - result.acceptedWrites;
  process.exitCode = exact && result.refusedWrites > 0 ? 0 : 1;
} catch (error) {
  console.error(`\n${error instanceof Error ? error.message : String(error)}`);
  console.error(`Are Redis (${redisUrl}) and PostgreSQL (${postgresUrl}) running? Start them with \`pnpm infra:up\`.`);
  process.exitCode = 1;
}
