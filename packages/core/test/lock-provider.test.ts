import { describe, expect, it } from 'vitest';
import {
  BaseLockProvider,
  lockLostError,
  monotonicNow,
  normalizeCapabilities,
  type BackendAcquireRequest,
  type BackendGrant,
  type LockBackend,
} from '../src/adapter.js';

/** A scripted backend: each acquire call runs the next step; lets core's own logic be tested precisely. */
class ScriptedBackend implements LockBackend {
  readonly name = 'scripted';
  readonly capabilities = normalizeCapabilities({ fencing: 'per-key', extend: true, lossDetection: true, expiry: 'session' });
  readonly requests: BackendAcquireRequest[] = [];
  releases = 0;
  constructor(readonly steps: ((request: BackendAcquireRequest) => Promise<BackendGrant | undefined>)[]) {}
  async acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    this.requests.push(request);
    const step = this.steps.shift();
    if (step === undefined) throw new Error('no more steps');
    return step(request);
  }
  async inspect(): Promise<undefined> {
    return undefined;
  }
  async close(): Promise<void> {}
  grant(validForMs: number, token = 1n): BackendGrant {
    return {
      fencingToken: token,
      validUntil: monotonicNow() + validForMs,
      extend: async () => monotonicNow() + validForMs,
      release: async () => {
        this.releases += 1;
        return true;
      },
    };
  }
}

describe('BaseLockProvider over a backend', () => {
  it('hands back a grant whose validity is already spent, and tries again', async () => {
    const backend = new ScriptedBackend([]);
    backend.steps.push(async () => backend.grant(-1, 1n), async () => backend.grant(5_000, 2n));
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k', { waitMs: 1_000 });
    expect(lock.fencingToken).toBe(2n);
    expect(backend.releases).toBe(1);
    await lock.release();
  });

  it('reports an acquire that failed, and a tryAcquire that found the key held, as events', async () => {
    const backend = new ScriptedBackend([]);
    backend.steps.push(
      async () => {
        throw new Error('connection refused');
      },
      async () => undefined,
    );
    const provider = new BaseLockProvider(backend);
    const failed: unknown[] = [];
    const declined: string[] = [];
    provider.on('failed', (event) => failed.push(event.error));
    provider.on('declined', (event) => declined.push(event.key));
    await expect(provider.acquire('k')).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    expect(failed).toEqual([expect.objectContaining({ code: 'LOCK_BACKEND_UNAVAILABLE' })]);
    expect(await provider.tryAcquire('k')).toBeUndefined();
    expect(declined).toEqual(['k']);
    expect(failed).toHaveLength(1);
  });

  it('on a session provider, extend(ttlMs) is LOCK_UNSUPPORTED whatever the value, as acquire(key, { ttlMs }) is', async () => {
    const backend = new ScriptedBackend([]);
    backend.steps.push(async () => backend.grant(5_000));
    const provider = new BaseLockProvider(backend);
    const lock = await provider.acquire('k');
    for (const ttlMs of [5_000, 0, Number.NaN, '1000', 2 ** 31, -1]) {
      await expect(provider.acquire('other', { ttlMs } as never)).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
      await expect(lock.extend(ttlMs as never)).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    }
    await lock.extend();
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  });

  it('releases a grant that arrives after the caller aborted', async () => {
    const controller = new AbortController();
    const backend = new ScriptedBackend([]);
    backend.steps.push(async () => {
      controller.abort();
      return backend.grant(5_000);
    });
    const provider = new BaseLockProvider(backend);
    await expect(provider.acquire('k', { signal: controller.signal })).rejects.toMatchObject({ code: 'LOCK_ABORTED' });
    expect(backend.releases).toBe(1);
  });

  it('applies a loss the backend reported while the grant was being made', async () => {
    const backend = new ScriptedBackend([]);
    backend.steps.push(async (request) => {
      request.observer.lost(lockLostError(request.key, 'session-lost'));
      return backend.grant(5_000);
    });
    const lock = await new BaseLockProvider(backend).acquire('k');
    expect(lock.state).toBe('lost');
    expect(lock.signal.reason).toMatchObject({ code: 'LOCK_LOST', reason: 'session-lost' });
  });

  it('tracks uncertain, recovered and renewed from the backend', async () => {
    const backend = new ScriptedBackend([]);
    let observer: BackendAcquireRequest['observer'] | undefined;
    backend.steps.push(async (request) => {
      observer = request.observer;
      return backend.grant(200);
    });
    const provider = new BaseLockProvider(backend);
    const states: string[] = [];
    provider.on('uncertain', () => states.push('uncertain'));
    provider.on('recovered', () => states.push('recovered'));
    const lock = await provider.acquire('k');
    observer?.uncertain();
    expect(lock.state).toBe('uncertain');
    expect(lock.isHeld()).toBe(true);
    observer?.recovered();
    const renewedUntil = monotonicNow() + 10_000;
    observer?.renewed(renewedUntil);
    expect(lock.validUntil).toBe(renewedUntil);
    expect(states).toEqual(['uncertain', 'recovered']);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(lock.isHeld()).toBe(true);
    await lock.release();
  });

  it('a session renewal answered after the validity ran out (a paused process) does not revive the lock', async () => {
    const backend = new ScriptedBackend([]);
    let observer: BackendAcquireRequest['observer'] | undefined;
    backend.steps.push(async (request) => {
      observer = request.observer;
      return backend.grant(50);
    });
    const provider = new BaseLockProvider(backend);
    const extended: number[] = [];
    provider.on('extended', (event) => extended.push(event.validUntil));
    const lock = await provider.acquire('k');
    // A keepalive sent now, whose answer is read only after the process was frozen past the
    // validity: its deadline (send time + timeout) is already over when the backend reports it.
    const sentAt = monotonicNow();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120);
    observer?.renewed(sentAt + 60);
    expect(lock.state).toBe('lost');
    expect(lock.isHeld()).toBe(false);
    expect(extended).toEqual([]);
    // A renewal that still leaves time, on a lock that is still valid, does extend it.
    const second = new ScriptedBackend([]);
    let secondObserver: BackendAcquireRequest['observer'] | undefined;
    second.steps.push(async (request) => {
      secondObserver = request.observer;
      return second.grant(5_000);
    });
    const other = new BaseLockProvider(second);
    const kept = await other.acquire('k');
    secondObserver?.renewed(monotonicNow() + 10_000);
    expect(kept.isHeld()).toBe(true);
    await kept.release();
  });

  it('wraps a client library failure as LOCK_BACKEND_UNAVAILABLE with the cause', async () => {
    const failure = new Error('ECONNREFUSED');
    const backend = new ScriptedBackend([
      async () => {
        throw failure;
      },
    ]);
    const error = await new BaseLockProvider(backend).acquire('k').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE', key: 'k' });
    expect((error as Error).cause).toBe(failure);
  });

  it('passes a deadline of now for a single try and of now + waitMs for acquire', async () => {
    const backend = new ScriptedBackend([async () => undefined, async () => undefined]);
    const provider = new BaseLockProvider(backend);
    const before = monotonicNow();
    expect(await provider.tryAcquire('k')).toBeUndefined();
    await expect(provider.acquire('k', { waitMs: 1234 })).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    const [single, waiting] = backend.requests;
    expect(single!.deadline - before).toBeLessThan(1234);
    expect(waiting!.deadline - single!.deadline).toBeGreaterThanOrEqual(1234);
  });
});
