/**
 * `bench:contention` runs the contention scenario alone: it must measure the subjects it is told to,
 * with the warm-up it is told to, and refuse a bad bound before it starts anything.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

function runCli(env: Record<string, string>): Promise<{ readonly code: number; readonly output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--conditions=@fencelock/source', '--import', 'tsx', 'src/cli-contention.ts'],
      { cwd: PACKAGE_DIR, env: { ...process.env, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` }),
    );
  });
}

describe('bench:contention', () => {
  it('measures only the subjects BENCH_ONLY names, after the warm-up it is given', async () => {
    const { code, output } = await runCli({ BENCH_ONLY: 'redis/fair-floor', BENCH_SECONDS: '0.5', BENCH_CONTENTION_WARMUP_SECONDS: '0.2', BENCH_CLIENTS: '2' });
    expect(output).toContain('contention: 2 processes, 0.2 s of warm-up, 0.5 s measured, 0 CPU hogs, 1 round(s)');
    const lines = output.split('\n').filter((line) => / acq\/s /.test(line));
    expect(lines).toHaveLength(1);
    // A fair lock with two clients: the releases go to the one waiting. Not every one: a request counts
    // as waiting from when it starts, and a release can reach the server before that request does
    // (the line is empty, and the releaser's next request may take the lock back first): under load,
    // a per cent or two of the releases.
    const measured = /^redis\/fair-floor\s+\d+\.\d acq\/s\s+(\d+) % to waiters/.exec(lines[0] ?? '');
    expect(measured, lines[0]).not.toBeNull();
    expect(Number(measured?.[1])).toBeGreaterThanOrEqual(90);
    expect(code).toBe(0);
  });

  it('refuses a bad bound or a filter that names nothing, before any process starts', async () => {
    const bad = await runCli({ BENCH_SECONDS: '-1' });
    expect(bad.code).not.toBe(0);
    expect(bad.output).toContain('BENCH_SECONDS must be a positive number');
    const none = await runCli({ BENCH_ONLY: 'no-such-subject' });
    expect(none.code).not.toBe(0);
    expect(none.output).toContain('BENCH_ONLY=no-such-subject names no subject');
    expect(none.output).not.toContain('contention:');
  });
});
