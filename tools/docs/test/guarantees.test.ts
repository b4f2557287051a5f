import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { guaranteesTable, withGuaranteesTable } from '../src/guarantees.js';

describe('the README guarantees table', () => {
  it('is the one generated from the providers\' capabilities (run `pnpm docs:guarantees`)', async () => {
    const readme = await readFile(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');
    expect(readme).toBe(withGuaranteesTable(readme, guaranteesTable()));
  });

  // The cell of `column` in the row of the provider whose name contains `provider`.
  const cell = (provider: string, column: string): string | undefined => {
    const rows = guaranteesTable().split('\n').map((row) => row.split('|').map((part) => part.trim()));
    const index = rows[0]?.indexOf(column) ?? -1;
    return rows.find((row) => row[1]?.includes(provider))?.[index];
  };

  it('states each provider\'s fencing honestly', () => {
    expect(cell('redlock', 'fencing')).toBe('none');
    expect(cell('etcd', 'fencing')).toBe('global');
    expect(cell('zookeeper', 'fencing')).toBe('global');
    expect(cell('@fencelock/redis', 'fencing')).toBe('per-key');
  });

  it('shows which providers have semaphores', () => {
    expect(cell('memory', 'semaphore')).toBe('multi-permit');
    expect(cell('redlock', 'semaphore')).toBe('none');
  });
});
