import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { topology } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { runInventory } from '../src/run-inventory.js';

const { etcdEndpoints } = topology();
const client = new Etcd3({ hosts: [...etcdEndpoints] });

afterAll(() => {
  client.close();
});

describe('the etcd inventory run', () => {
  it('refuses the stalled worker\'s late transaction and ends with exactly initial stock minus orders', async () => {
    const lines: string[] = [];
    const sku = `widget-test-${randomUUID()}`;
    const stockKey = `inventory/${sku}/stock`;
    try {
      const result = await runInventory({ endpoints: etcdEndpoints, sku, initialStock: 10, orders: 6, print: (line) => lines.push(line) });
      // The stalled worker's write, at least. Another refusal is possible only if a busy machine stalls
      // a second holder past its lock's lifetime: a real loss, refused just the same.
      expect(result.refusedWrites).toBeGreaterThanOrEqual(1);
      expect(result.acceptedWrites).toBe(6);
      expect(result.finalStock).toBe(4);
      // What etcd itself holds, and no lock key left behind by any worker (the stalled one included).
      expect(await client.get(stockKey).string()).toBe('4');
      expect(await client.getAll().prefix(`fencelock/inventory:${sku}/`).keys()).toEqual([]);

      // The story in order: worker-1's lease ran out and another worker sold; only then did worker-1's transaction fail.
      const whats = result.timeline.entries.map((entry) => `${entry.who}: ${entry.what}`);
      const expired = whats.findIndex((what) => what.startsWith('worker-1: (still stalled) lease gone: isHeld() false, signal aborted with LOCK_LOST'));
      const takeover = whats.findIndex((what) => /^worker-[23]: order #\d+: .* committed$/.test(what));
      const refused = whats.findIndex((what) => what.startsWith('worker-1: REFUSED by etcd'));
      expect(expired).toBeGreaterThanOrEqual(0);
      expect(takeover).toBeGreaterThanOrEqual(0);
      expect(refused).toBeGreaterThan(Math.max(expired, takeover));
      expect(lines.some((line) => line.startsWith('Final stock 4 (started with 10); transactions committed 6, refused '))).toBe(true);
    } finally {
      await client.delete().key(stockKey);
    }
  });

  it('runs as `pnpm start` does and exits with 0', async () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const sku = `widget-test-${randomUUID()}`;
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=@fencelock/source', '--import', 'tsx', main, '--sku', sku], {
        cwd: fileURLToPath(new URL('..', import.meta.url)),
        env: { ...process.env, FENCELOCK_ETCD_ENDPOINTS: etcdEndpoints.join(',') },
        timeout: 45_000,
      });
      expect(stdout).toContain('REFUSED by etcd');
      expect(stdout).toContain('Final stock 4 (started with 10); transactions committed 6, refused ');
    } finally {
      await client.delete().key(`inventory/${sku}/stock`);
    }
  });
});
