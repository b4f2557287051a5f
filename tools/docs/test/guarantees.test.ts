import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { guaranteesTable, withGuaranteesTable } from '../src/guarantees.js';

describe('the README guarantees table', () => {
  it('is the one generated from the providers\' capabilities (run `pnpm docs:guarantees`)', async () => {
    const readme = await readFile(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');
    expect(readme).toBe(withGuaranteesTable(readme, guaranteesTable()));
  });

  it('states each provider\'s fencing honestly', () => {
    const rows = guaranteesTable().split('\n');
    expect(rows.find((row) => row.includes('redlock'))).toContain('| none |');
    expect(rows.find((row) => row.includes('etcd'))).toContain('| global |');
    expect(rows.find((row) => row.includes('zookeeper'))).toContain('| global |');
    expect(rows.find((row) => row.includes('@fencelock/redis'))).toContain('| per-key |');
  });
});
