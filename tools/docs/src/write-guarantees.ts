import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { guaranteesTable, withGuaranteesTable } from './guarantees.js';

const readme = fileURLToPath(new URL('../../../README.md', import.meta.url));
const before = await readFile(readme, 'utf8');
const after = withGuaranteesTable(before, guaranteesTable());
await writeFile(readme, after);
console.log(before === after ? 'README.md guarantees table is up to date' : 'README.md guarantees table regenerated');
