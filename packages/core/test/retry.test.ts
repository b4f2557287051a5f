import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, backoffDelayMs, monotonicNow, waitForGrant, type Wakeup } from '../src/adapter.js';

describe('backoffDelayMs', () => {
  it('grows exponentially up to the cap, with jitter in the upper half', () => {
    expect(backoffDelayMs(0, DEFAULT_RETRY, () => 0)).toBe(5);
    expect(backoffDelayMs(0, DEFAULT_RETRY, () => 1)).toBe(10);
    expect(backoffDelayMs(3, DEFAULT_RETRY, () => 1)).toBe(80);
    expect(backoffDelayMs(50, DEFAULT_RETRY, () => 1)).toBe(500);
    expect(backoffDelayMs(5000, DEFAULT_RETRY, () => 0.5)).toBe(375);
  });
});

describe('waitForGrant', () => {
  const request = (deadline: number, signal = new AbortController().signal) => {
    let contended = 0;
    return { deadline, signal, contended: () => (contended += 1), count: () => contended };
  };

  it('tries until an attempt succeeds, reporting contention once', async () => {
    let attempts = 0;
    const r = request(monotonicNow() + 5_000);
    const grant = await waitForGrant(r, async () => (++attempts === 3 ? 'granted' : undefined), { retry: { initialDelayMs: 1, maxDelayMs: 2 } });
    expect(grant).toBe('granted');
    expect(attempts).toBe(3);
    expect(r.count()).toBe(1);
  });

  it('leaves contention to the attempt with reportContention: false', async () => {
    let attempts = 0;
    const r = request(monotonicNow() + 5_000);
    const grant = await waitForGrant(r, async () => (++attempts === 2 ? 'granted' : undefined), {
      retry: { initialDelayMs: 1, maxDelayMs: 2 },
      reportContention: false,
    });
    expect(grant).toBe('granted');
    expect(r.count()).toBe(0);
  });

  it('gives up at the deadline with undefined', async () => {
    const r = request(monotonicNow() + 30);
    expect(await waitForGrant(r, async () => undefined, { retry: { initialDelayMs: 5 } })).toBeUndefined();
    expect(monotonicNow()).toBeGreaterThanOrEqual(r.deadline);
  });

  it('tries exactly once when the deadline is now', async () => {
    let attempts = 0;
    const r = request(monotonicNow());
    expect(await waitForGrant(r, async () => void (attempts += 1))).toBeUndefined();
    expect(attempts).toBe(1);
  });

  it('rejects with the abort reason and closes the wakeup source', async () => {
    const controller = new AbortController();
    let closed = false;
    const wakeup = (): Wakeup => ({
      wait: (_ms, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      close: () => void (closed = true),
    });
    const waiting = waitForGrant(request(Number.POSITIVE_INFINITY, controller.signal), async () => undefined, { wakeup });
    const reason = new Error('stop');
    setImmediate(() => controller.abort(reason));
    await expect(waiting).rejects.toBe(reason);
    expect(closed).toBe(true);
  });

  it('retries as soon as the wakeup source fires, without waiting for the backoff', async () => {
    let wake: (() => void) | undefined;
    let attempts = 0;
    const wakeup = (): Wakeup => ({
      wait: () => new Promise<void>((resolve) => (wake = resolve)),
      close: () => undefined,
    });
    const waiting = waitForGrant(request(Number.POSITIVE_INFINITY), async () => (++attempts === 2 ? 'free' : undefined), {
      wakeup,
      retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    await new Promise((resolve) => setImmediate(resolve));
    wake?.();
    expect(await waiting).toBe('free');
  });
});
