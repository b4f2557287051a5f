import { spawn } from 'node:child_process';
import { waitFor } from '@fencelock/test-infra';
import { afterEach, describe, expect, it } from 'vitest';
import { groupRunning } from '../src/process-group.js';
import { processState } from './support/process-state.js';

describe('groupRunning', () => {
  const started: number[] = [];
  afterEach(() => {
    for (const pid of started.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });

  it('sees a running group, and none once its only process has exited and been reaped', async () => {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const pid = child.pid as number;
    started.push(pid);
    expect(groupRunning(pid)).toBe(true);
    process.kill(-pid, 'SIGTERM');
    await exited;
    expect(groupRunning(pid)).toBe(false);
  });

  it('does not count a zombie that nobody reaps as running', async () => {
    // `setsid sleep 0` leads a group of its own; its parent then becomes `sleep 30`, which never
    // reaps it, so it stays a zombie in that group.
    const parent = spawn('sh', ['-c', 'setsid sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(parent.pid as number);
    const zombie = await new Promise<number>((resolve) => parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
    await waitFor(async () => (processState(zombie) === 'Z' ? true : undefined), { what: `process ${zombie} to be a zombie`, timeoutMs: 10_000 });
    // It can still be signalled (so `kill -0` would call the group alive), yet nothing in it runs.
    expect(() => process.kill(-zombie, 0)).not.toThrow();
    expect(groupRunning(zombie)).toBe(false);
  });

  it('sees no group that does not exist', () => {
    // Pids are below 2^22 on Linux; this one cannot be a group.
    expect(groupRunning(2 ** 30)).toBe(false);
  });
});
