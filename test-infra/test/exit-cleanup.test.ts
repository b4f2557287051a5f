import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { processState } from '../src/processes.js';

const run = promisify(execFile);

/**
 * A child process starts dedicated servers, pauses one, and exits without stopping them;
 * the 'exit' hook must kill them (by PID) and delete their temp dirs.
 */
const SCRIPT = `
import { startRedisServer } from './src/index.ts';
const running = await startRedisServer();
const paused = await startRedisServer({ persistence: true });
await paused.pause();
console.log(JSON.stringify({ pids: [running.pid, paused.pid], logs: [running.logFile, paused.logFile] }));
process.exit(0);
`;

describe('cleanup at process exit', () => {
  it('kills dedicated servers a test forgot to stop, paused ones included, and removes their data', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', SCRIPT], {
      cwd: new URL('..', import.meta.url).pathname,
      timeout: 30_000,
    });
    const { pids, logs } = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { pids: number[]; logs: string[] };
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect([undefined, 'Z']).toContain(processState(pid));
    for (const log of logs) expect(existsSync(log)).toBe(false);
  });
});
