import { describe, expect, it } from 'vitest';
import { DEMO_BACKENDS } from '../src/backends.js';
import { runDemo } from '../src/run-demo.js';

describe('the demo', () => {
  it('on memory: the paused worker loses the lock and its late write is refused', async () => {
    const lines: string[] = [];
    const result = await runDemo({ backendName: 'memory', backend: await DEMO_BACKENDS.memory!(), print: (line) => lines.push(line) });
    expect(result.lateWriteRefused).toBe(true);
    expect(result.refused).toBe(1);
    expect(result.accepted).toBe(5);
    expect(lines.some((line) => line.includes('REFUSED by the fencing guard'))).toBe(true);
    expect(lines.some((line) => line.includes('lock.isHeld() is false, signal aborted: LOCK_LOST (expired)'))).toBe(true);
  });
});
