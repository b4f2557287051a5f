import { parseArgs } from 'node:util';
import { DEMO_BACKENDS } from './backends.js';
import { runDemo } from './run-demo.js';

const { values } = parseArgs({
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
const result = await runDemo({ backendName: name, backend: await load() });
process.exitCode = result.refused > 0 || name === 'redlock' ? 0 : 1;
