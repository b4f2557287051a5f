import { describe, expect, it } from 'vitest';
import {
  BaseLockProvider,
  LockErrorCode,
  monotonicNow,
  normalizeCapabilities,
  withLock,
  type BackendAcquireRequest,
  type BackendGrant,
  type LockBackend,
  type LockEventMap,
} from '../src/adapter.js';

/** A backend whose releases fail while `down` is true, as an unreachable server's would. */
class FlakyBackend implements LockBackend {
  readonly name = 'flaky';
  readonly capabilities = normalizeCapabilities({ fencing: 'per-key', extend: true, lossDetection: true });
  down = false;
  attempts = 0;
  deleted = 0;
  readonly requests: BackendAcquireRequest[] = [];
  validForMs = 60_000;
  async acquire(request: BackendAcquireRequest): Promise<BackendGrant> {
    this.requests.push(request);
    const validUntil = monotonicNow() + this.validForMs;
    return {
      fencingToken: 1n,
      validUntil,
      extend: async () => {
        if (this.down) throw new Error('ECONNREFUSED');
        return monotonicNow() + this.validForMs;
      },
      release: () => this.release(),
    };
  }
  async release(): Promise<boolean> {
    this.attempts += 1;
    if (this.down) throw new Error('ECONNREFUSED');
    this.deleted += 1;
    return true;
  }
  async inspect(): Promise<undefined> {
    return undefined;
  }
  async close(): Promise<void> {}
}

function next<E extends keyof LockEventMap>(provider: BaseLockProvider, event: E, ms = 5_000): Promise<LockEventMap[E]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} event within ${ms} ms`)), ms);
    const off = provider.on(event, (payload) => {
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

describe('release, owned by core', () => {
  it('never rejects when the backend is unreachable, and retries in the background until it answers', async () => {
    const backend = new FlakyBackend();
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k');
    backend.down = true;
    const failed = next(provider, 'release-failed');
    await expect(lock.release()).resolves.toBe(true);
    expect(lock.state).toBe('releasing');
    expect(lock.isHeld()).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    const failure = await failed;
    expect(failure).toMatchObject({ key: 'k', willRetry: true, error: { code: LockErrorCode.BACKEND_UNAVAILABLE } });
    const released = next(provider, 'released');
    backend.down = false;
    expect(await released).toMatchObject({ key: 'k', wasHeld: true, confirmed: true });
    expect(lock.state).toBe('released');
    expect(backend.deleted).toBe(1);
    expect(backend.attempts).toBeGreaterThanOrEqual(2);
    // A second release is a no-op and sends nothing.
    const attempts = backend.attempts;
    await expect(lock.release()).resolves.toBe(false);
    expect(backend.attempts).toBe(attempts);
    await provider.close();
  });

  it('gives up when the lock\'s validity ends, and says so', async () => {
    const backend = new FlakyBackend();
    backend.validForMs = 300;
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k', { autoExtend: false });
    backend.down = true;
    const events: LockEventMap['release-failed'][] = [];
    provider.on('release-failed', (event) => events.push(event));
    const released = next(provider, 'released');
    await lock.release();
    expect(await released).toMatchObject({ wasHeld: false, confirmed: false });
    expect(monotonicNow()).toBeGreaterThanOrEqual(lock.validUntil);
    expect(events.map((event) => event.willRetry)).toEqual([true, false]);
    expect(lock.state).toBe('released');
    await provider.close();
  });

  it('withLock resolves with the callback\'s result when only the release failed', async () => {
    const backend = new FlakyBackend();
    const provider = new BaseLockProvider(backend);
    let runs = 0;
    const result = await withLock(provider, 'k', () => {
      runs += 1;
      backend.down = true;
      return 'done';
    });
    expect(result).toBe('done');
    expect(runs).toBe(1);
    backend.down = false;
    await provider.close();
    // close() gave the pending release its last attempt.
    expect(backend.deleted).toBe(1);
  });

  it('await using ends without throwing when the release fails', async () => {
    const backend = new FlakyBackend();
    const provider = new BaseLockProvider(backend);
    {
      await using lock = await provider.acquire('k');
      expect(lock.isHeld()).toBe(true);
      backend.down = true;
    }
    expect(backend.attempts).toBe(1);
    backend.down = false;
    await provider.close();
  });

  it('wraps a raw error from extend in a LockError with a code', async () => {
    const backend = new FlakyBackend();
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k', { autoExtend: false });
    backend.down = true;
    await expect(lock.extend()).rejects.toMatchObject({ code: LockErrorCode.BACKEND_UNAVAILABLE, key: 'k' });
    expect(lock.isHeld()).toBe(true);
    backend.down = false;
    await lock.release();
    await provider.close();
  });

  it('retries what a backend hands over with releaseLater, until it is answered', async () => {
    const backend = new FlakyBackend();
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k');
    backend.down = true;
    backend.requests[0]!.releaseLater(() => backend.release(), monotonicNow() + 60_000);
    expect(backend.attempts).toBe(1);
    backend.down = false;
    await lock.release();
    await provider.close();
    expect(backend.deleted).toBe(2);
  });

  it('releaseLater resolves once its first attempt has settled, answered or failed, and never rejects', async () => {
    const backend = new FlakyBackend();
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k');
    const request = backend.requests[0]!;
    let answer: (() => void) | undefined;
    let first = false;
    const answered = request.releaseLater(() => new Promise<void>((resolve) => (answer = resolve)), monotonicNow() + 60_000);
    void answered.then(() => (first = true));
    await Promise.resolve();
    expect(first).toBe(false);
    answer!();
    await expect(answered).resolves.toBeUndefined();
    backend.down = true;
    // A failed first attempt settles it too: the retries go on in the background.
    await expect(request.releaseLater(() => backend.release(), monotonicNow() + 60_000)).resolves.toBeUndefined();
    const failedAt = backend.attempts;
    backend.down = false;
    await lock.release();
    await provider.close();
    expect(backend.attempts).toBeGreaterThan(failedAt);
  });
});
