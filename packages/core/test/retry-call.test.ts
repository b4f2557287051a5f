import { describe, expect, it } from 'vitest';
import { retryCall } from '../src/lifecycle/retry-call.js';

const FAST = { initialDelayMs: 1, maxDelayMs: 2, factor: 2 };

describe('retryCall', () => {
  it('resolves the first success, after the failures before it', async () => {
    let calls = 0;
    const result = await retryCall(
      async () => {
        calls += 1;
        if (calls < 3) throw new Error('not yet');
        return 'read';
      },
      { attempts: 5, retry: FAST },
    );
    expect(result).toEqual({ value: 'read' });
    expect(calls).toBe(3);
  });

  it('makes at most `attempts` calls, then resolves undefined', async () => {
    let calls = 0;
    const result = await retryCall(
      async () => {
        calls += 1;
        throw new Error('down');
      },
      { attempts: 4, retry: FAST },
    );
    expect(result).toBeUndefined();
    expect(calls).toBe(4);
  });

  it('stops when proceed says no, and when the signal aborts during a backoff delay', async () => {
    let calls = 0;
    expect(
      await retryCall(
        async () => {
          calls += 1;
          throw new Error('down');
        },
        { attempts: 10, retry: FAST, proceed: () => calls < 2 },
      ),
    ).toBeUndefined();
    expect(calls).toBe(2);
    const aborter = new AbortController();
    let aborted = 0;
    const pending = retryCall(
      async () => {
        aborted += 1;
        throw new Error('down');
      },
      // A backoff far longer than the test: only the abort can end it.
      { attempts: 10, retry: { initialDelayMs: 600_000, maxDelayMs: 600_000, factor: 1 }, signal: aborter.signal },
    );
    await Promise.resolve();
    aborter.abort();
    expect(await pending).toBeUndefined();
    expect(aborted).toBe(1);
  });
});
