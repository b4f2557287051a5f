import { parseArgs } from 'node:util';
import { isLockError } from '@fencelock/core';
import { DEMO_BACKENDS } from './backends.js';
import { runDemo } from './run-demo.js';

const { values } = parseArgs({
  // `pnpm demo -- --backend x` passes the `--` through: accept it as a positional and ignore it.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { backend: { type: 'string', default: 'memory' }, help: { type: 'boolean', default: false } },
});
const names = Object.keys(DEMO_BACKENDS);
if (values.help) {
  console.log(`usage: pnpm demo [--backend ${names.join('|')}]`);
  process.exit(0);
}
const name = values.backend ?? 'memory';
const load = DEMO_BACKENDS[name];
if (load === undefined) {
  console.error(`unknown backend "${name}"; choose one of: ${names.join(', ')}`);
  process.exit(2);
}
const backend = await load();
// One quick look at the backend first, so a server that is not running gives a hint, not a long wait.
const probe = await backend.connect();
const reachable = await Promise.race([
  probe.inspect('demo:probe').then(() => true, () => false),
  new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000).unref()),
]);
await Promise.race([probe.close(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
if (!reachable) {
  console.error(`The ${name} server does not answer. Start the test servers with \`pnpm infra:up\` (or set FENCELOCK_* addresses).`);
  process.exit(1);
}
try {
  const result = await runDemo({ backendName: name, backend });
  process.exitCode = result.refused > 0 || name === 'redlock' ? 0 : 1;
} catch (error) {
  if (!isLockError(error, 'LOCK_BACKEND_UNAVAILABLE') && !isLockError(error, 'LOCK_TIMEOUT')) throw error;
  console.error(`\n${error.message}\nIs the ${name} server running? Start the test servers with \`pnpm infra:up\`.`);
  process.exitCode = 1;
}
