import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, LockError, backoffDelayMs, monotonicNow, retryableFailure, waitForGrant, type Wakeup } from '../src/adapter.js';

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
    return { deadline, waitSignal: signal, contended: () => (contended += 1), count: () => contended };
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

  describe('with retryFailed', () => {
    const failure = new Error('no reply within 1000 ms');
    const retry = { initialDelayMs: 1, maxDelayMs: 2 };

    it('retries a failed attempt while the deadline lasts, without reporting it as contention', async () => {
      let attempts = 0;
      const r = request(monotonicNow() + 5_000);
      const grant = await waitForGrant(
        r,
        async () => {
          attempts += 1;
          if (attempts < 3) throw failure;
          return 'granted';
        },
        { retry, retryFailed: () => true },
      );
      expect(grant).toBe('granted');
      expect(attempts).toBe(3);
      expect(r.count()).toBe(0);
    });

    it('throws the failure of the last attempt at the deadline, and undefined when the last one found the key held', async () => {
      const failing = request(monotonicNow() + 30);
      await expect(waitForGrant(failing, async () => Promise.reject(failure), { retry, retryFailed: () => true })).rejects.toBe(failure);
      let attempts = 0;
      const recovered = request(monotonicNow() + 30);
      const held = waitForGrant(
        recovered,
        async () => {
          attempts += 1;
          if (attempts === 1) throw failure;
          return undefined;
        },
        { retry, retryFailed: () => true },
      );
      expect(await held).toBeUndefined();
      expect(attempts).toBeGreaterThan(1);
    });

    it("throws the caller's failed first attempt when the deadline passed before the loop could try again", async () => {
      // The caller tried once itself (afterFirstAttempt) and its try failed; the deadline passed meanwhile.
      const options = { retry, afterFirstAttempt: true, retryFailed: () => true };
      let attempts = 0;
      const seeded = waitForGrant(request(monotonicNow() - 1), async () => void (attempts += 1), { ...options, firstAttemptFailure: { error: failure } });
      await expect(seeded).rejects.toBe(failure);
      // Without it, that ending reads as a key found held.
      expect(await waitForGrant(request(monotonicNow() - 1), async () => void (attempts += 1), options)).toBeUndefined();
      expect(attempts).toBe(0);
      // A later attempt that finds the key held replaces it: the wait ends with undefined.
      const answered = waitForGrant(request(monotonicNow() + 20), async () => void (attempts += 1), { ...options, firstAttemptFailure: { error: failure } });
      expect(await answered).toBeUndefined();
      expect(attempts).toBeGreaterThan(0);
    });

    it('throws at once a failure it is told not to retry, and any failure of a single try', async () => {
      const refused = new Error('refused');
      let attempts = 0;
      const r = request(monotonicNow() + 5_000);
      const once = waitForGrant(r, async () => (++attempts, Promise.reject(refused)), { retry, retryFailed: (error) => error !== refused });
      await expect(once).rejects.toBe(refused);
      expect(attempts).toBe(1);
      await expect(waitForGrant(request(monotonicNow()), async () => Promise.reject(failure), { retryFailed: () => true })).rejects.toBe(failure);
    });
  });

  it('retryableFailure retries anything but a LockError other than LOCK_BACKEND_UNAVAILABLE', () => {
    expect(retryableFailure(new Error('socket hang up'))).toBe(true);
    expect(retryableFailure(new LockError('LOCK_BACKEND_UNAVAILABLE', 'no reply'))).toBe(true);
    expect(retryableFailure(new LockError('LOCK_FORBIDDEN', 'refused'))).toBe(false);
  });
});

