import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { FencingGuard, MemoryLockProvider, type LockError } from '@fencelock/core';
import { createLockProvider } from '@fencelock/core/adapter';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { instrumentFencingGuard, instrumentLockProvider } from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';
import { warningBackend } from './support/warning-backend.js';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');

/** `{ name, instrument, unit }` of each row of the README's metric table. */
function documentedMetrics(): string[] {
  const rows = [...readme.matchAll(/^\| `(fencelock\.[a-z._]+)` \| (\w+) \| `([^`]+)` \|/gm)];
  return rows.map(([, name, instrument, unit]) => `${name} ${instrument} ${unit}`).sort();
}

/** Runs `code` as an ES module in this package's directory; resolves its exit code and output. */
function runModule(code: string, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--conditions=@fencelock/source', '--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: packageDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the README example did not exit within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the README', () => {
  let otel: OtelHarness;
  beforeEach(() => {
    otel = new OtelHarness();
  });
  afterEach(async () => {
    await otel.shutdown();
  });

  it('documents exactly the metrics that are exported, with their instrument and unit', async () => {
    const locks = new MemoryLockProvider();
    const guard = new FencingGuard();
    using _locks = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    using _guard = instrumentFencingGuard(guard, { meterProvider: otel.meterProvider });
    const checked = createLockProvider(warningBackend());
    using _checked = instrumentLockProvider(checked, { meterProvider: otel.meterProvider });
    await checked.checkBackend?.();
    // Make every instrument record something.
    const holder = await locks.acquire('readme:a', { autoExtend: false });
    await holder.extend();
    const timedOut = await locks.acquire('readme:a', { waitMs: 5 }).catch((error: LockError) => error);
    expect((timedOut as LockError).code).toBe('LOCK_TIMEOUT');
    await holder.release();
    const lost = nextEvent(locks, 'lost');
    await locks.acquire('readme:b', { ttlMs: 20, autoExtend: false });
    await lost;
    const current = await locks.acquire('readme:c');
    // A semaphore's permits, and a call that waits for one of them.
    const permit = await locks.acquireSemaphore('readme:s', { limit: 1 });
    const noPermit = await locks.acquireSemaphore('readme:s', { limit: 1, waitMs: 5 }).catch((error: LockError) => error);
    expect((noPermit as LockError).code).toBe('LOCK_TIMEOUT');
    // A leadership won, a campaign waiting behind it, and the resign that hands it over.
    const leader = await locks.campaign('readme:e', { value: 'a' });
    const campaigning = nextEvent(locks, 'contended', (event) => event.mode === 'leader');
    const next = locks.campaign('readme:e', { value: 'b' });
    await campaigning;
    await leader.resign();
    const successor = await next;
    guard.check('readme:c', 2n);
    guard.check('readme:c', 1n);

    const metrics = await otel.collect();
    const exported = metrics.metrics
      .map((metric) => {
        const instrument =
          metric.dataPointType === DataPointType.HISTOGRAM
            ? 'Histogram'
            : metric.dataPointType === DataPointType.SUM && metric.isMonotonic
              ? 'Counter'
              : metric.dataPointType === DataPointType.SUM
                ? 'UpDownCounter'
                : 'other';
        return `${metric.descriptor.name} ${instrument} ${metric.descriptor.unit}`;
      })
      .sort();
    expect(exported).toEqual(documentedMetrics());
    expect(exported).toHaveLength(14);
    await current.release();
    await permit.release();
    await successor.resign();
    await locks.close();
    await checked.close();
  });

  it('starts with an example that runs and exports fencelock metrics', async () => {
    const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    expect(example?.trim().split('\n').length).toBeLessThanOrEqual(11);
    const result = await runModule(example ?? '', 30_000);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("name: 'fencelock.lock.acquire.duration'");
    expect(result.stdout).toContain("name: 'fencelock.lock.hold.duration'");
  });
});
