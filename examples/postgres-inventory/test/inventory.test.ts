import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { topology } from '@fencelock/test-infra';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { InventoryTable } from '../src/inventory-table.js';
import { runInventory } from '../src/run-inventory.js';

const { postgresUrl } = topology();
const pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
const tables: InventoryTable[] = [];

/** A table of its own per test, dropped at the end: runs never see each other's rows. */
function uniqueTable(): string {
  return `inventory_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

afterAll(async () => {
  for (const table of tables) await table.drop();
  await pool.end();
});

describe('the inventory table', () => {
  it('refuses a table name it would have to quote', () => {
    expect(() => new InventoryTable(pool, 'inventory; DROP TABLE x')).toThrow(RangeError);
  });
});

describe('the inventory run', () => {
  it('refuses the stalled worker\'s late write and ends with exactly initial stock minus orders', async () => {
    const name = uniqueTable();
    tables.push(new InventoryTable(pool, name));
    const lines: string[] = [];
    const result = await runInventory({ postgresUrl, table: name, initialStock: 10, orders: 6, print: (line) => lines.push(line) });

    // The stalled worker's write, at least. Another refusal is possible only if a busy machine stalls
    // a second holder past its session's TTL: a real loss, refused just the same.
    expect(result.refusedWrites).toBeGreaterThanOrEqual(1);
    expect(result.acceptedWrites).toBe(6);
    expect(result.finalStock).toBe(4);
    // What the database itself holds.
    const row = await pool.query<{ stock: number }>(`SELECT stock FROM "${name}" WHERE sku = $1`, [result.sku]);
    expect(row.rows).toEqual([{ stock: 4 }]);

    // The story in order: worker-1's session was ended and another worker sold; only then was worker-1's write refused.
    const whats = result.timeline.entries.map((entry) => `${entry.who}: ${entry.what}`);
    const expired = whats.findIndex((what) => what.startsWith('worker-1: (still stalled) the server ended its session: isHeld() false, signal aborted with LOCK_LOST'));
    const takeover = whats.findIndex((what) => /^worker-[23]: order #\d+: .* accepted$/.test(what));
    const refused = whats.findIndex((what) => what.startsWith('worker-1: REFUSED by PostgreSQL: guarded write to'));
    expect(expired).toBeGreaterThanOrEqual(0);
    expect(takeover).toBeGreaterThanOrEqual(0);
    expect(refused).toBeGreaterThan(Math.max(expired, takeover));
    expect(lines.some((line) => line.startsWith('Final stock 4 (started with 10); writes accepted 6, refused '))).toBe(true);
  });

  it('runs as `pnpm start` does and exits with 0', async () => {
    const name = uniqueTable();
    tables.push(new InventoryTable(pool, name));
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--conditions=@fencelock/source', '--import', 'tsx', main, '--table', name],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), env: { ...process.env, FENCELOCK_POSTGRES_URL: postgresUrl }, timeout: 45_000 },
    );
    expect(stdout).toContain('REFUSED by PostgreSQL');
    expect(stdout).toContain('Final stock 4 (started with 10); writes accepted 6, refused ');
  });
});
