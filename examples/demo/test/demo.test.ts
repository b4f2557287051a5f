import { describe, expect, it } from 'vitest';
import { DEMO_BACKENDS } from '../src/backends.js';
import { runDemo } from '../src/run-demo.js';

// Every backend the demo offers runs here, against the servers the test command started.
describe('the demo', () => {
  for (const name of Object.keys(DEMO_BACKENDS)) {
    it(`on ${name}: the paused worker loses the lock, and its late write is refused where the backend fences`, async () => {
      const lines: string[] = [];
      const backend = await DEMO_BACKENDS[name]!();
      const result = await runDemo({ backendName: name, backend, print: (line) => lines.push(line) });
      expect(lines.some((line) => line.includes('lock.isHeld() is false, signal aborted: LOCK_LOST'))).toBe(true);
      if (name === 'redlock') {
        // No fencing token: the stale write goes through, which is exactly what the demo warns about.
        expect(result.lateWriteRefused).toBe(false);
        expect(result.accepted).toBeGreaterThanOrEqual(6);
      } else {
        expect(result.lateWriteRefused).toBe(true);
        expect(result.refused).toBe(1);
        expect(result.accepted).toBeGreaterThanOrEqual(5);
        expect(lines.some((line) => line.includes('REFUSED by the fencing guard'))).toBe(true);
      }
    });
  }
});
