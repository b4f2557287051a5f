import { describe, expect, it } from 'vitest';
import {
  BaseLockProvider,
  monotonicNow,
  normalizeCapabilities,
  type BackendAcquireRequest,
  type BackendGrant,
  type LockBackend,
} from '../src/adapter.js';

/**
 * A backend whose acquire runs the given step: core's handling of aborts and shutdown around an
 * attempt is tested precisely, whether or not the attempt reads its signal.
 */
class StepBackend implements LockBackend {
  readonly name = 'step';
  readonly capabilities = normalizeCapabilities({ fencing: 'per-key', extend: true, lossDetection: true });
  releases = 0;
  closed = false;
  constructor(readonly step: (request: BackendAcquireRequest) => Promise<BackendGrant | undefined>) {}
  acquire(request: BackendAcquireRequest): Promise<BackendGrant | undefined> {
    return this.step(request);
  }
  async inspect(): Promise<undefined> {
    return undefined;
  }
  async close(): Promise<void> {
    this.closed = true;
  }
  grant(validForMs: number): BackendGrant {
    return {
      fencingToken: 1n,
      validUntil: monotonicNow() + validForMs,
      extend: async () => monotonicNow() + validForMs,
      release: async () => {
        this.releases += 1;
        return true;
      },
    };
  }
}

/** Resolves when `signal` aborts, with its reason. */
function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

describe('an acquire call and its signal', () => {
  it('aborts the signal a waiting backend holds when the caller aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const backend = new StepBackend(async (request) => {
      // The backend waits on the signal; the abort must reach it (and end the wait), not just core.
      const waiting = aborted(request.signal);
      controller.abort(reason);
      throw await waiting;
    });
    const provider = new BaseLockProvider(backend);
    const events: string[] = [];
    provider.on('aborted', () => events.push('aborted'));
    const error = await provider.acquire('k', { waitMs: 10_000, signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LOCK_ABORTED', key: 'k' });
    expect(events).toEqual(['aborted']);
  });

  it('gives a backend that reads the signal after the caller aborted an already aborted signal, with the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    let seen: { aborted: boolean; reason: unknown } | undefined;
    const backend = new StepBackend(async (request) => {
      controller.abort(reason);
      seen = { aborted: request.signal.aborted, reason: request.signal.reason };
      return undefined;
    });
    await expect(new BaseLockProvider(backend).acquire('k', { waitMs: 10_000, signal: controller.signal })).rejects.toMatchObject({
      code: 'LOCK_ABORTED',
    });
    expect(seen).toEqual({ aborted: true, reason });
  });

  it('fails an attempt in flight at close() with LOCK_BACKEND_UNAVAILABLE and hands its grant back, before closing the backend', async () => {
    let proceed!: () => void;
    const started = new Promise<void>((resolve) => {
      proceed = resolve;
    });
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const backend: StepBackend = new StepBackend(async () => {
      proceed();
      await resumed;
      // The backend never looked at the signal: the shutdown must still be applied to its grant.
      return backend.grant(5_000);
    });
    const provider = new BaseLockProvider(backend);
    const failed: unknown[] = [];
    provider.on('failed', (event) => failed.push(event.error));
    const acquiring = provider.acquire('k').catch((e: unknown) => e);
    await started;
    const closing = provider.close();
    expect(backend.closed).toBe(false);
    resume();
    expect(await acquiring).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    await closing;
    expect(backend.releases).toBe(1);
    expect(backend.closed).toBe(true);
    expect(failed).toEqual([expect.objectContaining({ code: 'LOCK_BACKEND_UNAVAILABLE' })]);
  });

  it('aborts the signal a waiting backend holds at close()', async () => {
    let signal: AbortSignal | undefined;
    const backend = new StepBackend(async (request) => {
      signal = request.signal;
      throw await aborted(request.signal);
    });
    const provider = new BaseLockProvider(backend);
    const acquiring = provider.acquire('k', { waitMs: 60_000 }).catch((e: unknown) => e);
    await Promise.resolve();
    await provider.close();
    expect(await acquiring).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    expect(signal?.aborted).toBe(true);
  });
});

describe("an acquire call's waitSignal (core's waits, without an AbortSignal)", () => {
  /** Resolves when `signal` aborts, with its reason. */
  const waitAborted = (signal: BackendAcquireRequest['waitSignal']): Promise<unknown> =>
    new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));

  /** Counts AbortControllers made while `work` runs (the cost a waiting call no longer pays). */
  async function countControllers<T>(work: () => Promise<T>): Promise<{ result: T; made: number }> {
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made += 1;
      }
    };
    try {
      return { result: await work(), made };
    } finally {
      globalThis.AbortController = Original;
    }
  }

  it('aborts with the caller, and a backend that waits on it makes no AbortController', async () => {
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    let seen: { before: boolean; after: boolean } | undefined;
    const backend = new StepBackend(async (request) => {
      const waiting = waitAborted(request.waitSignal);
      const before = request.waitSignal.aborted;
      controller.abort(reason);
      expect(await waiting).toBe(reason);
      seen = { before, after: request.waitSignal.aborted };
      throw request.waitSignal.reason;
    });
    const provider = new BaseLockProvider(backend);
    const { result, made } = await countControllers(() => provider.acquire('k', { waitMs: 10_000, signal: controller.signal }).catch((e: unknown) => e));
    expect(result).toMatchObject({ code: 'LOCK_ABORTED', key: 'k' });
    expect(seen).toEqual({ before: false, after: true });
    expect(made).toBe(0);
  });

  it('aborts at close(), together with a signal read meanwhile, with the same reason', async () => {
    let request: BackendAcquireRequest | undefined;
    const backend = new StepBackend(async (r) => {
      request = r;
      throw await waitAborted(r.waitSignal);
    });
    const provider = new BaseLockProvider(backend);
    const acquiring = provider.acquire('k', { waitMs: 60_000 }).catch((e: unknown) => e);
    await Promise.resolve();
    const signal = request?.signal;
    await provider.close();
    expect(await acquiring).toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    expect(request?.waitSignal.aborted).toBe(true);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(request?.waitSignal.reason);
  });

  it('calls no listener that was removed, and none added after the abort', async () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const backend = new StepBackend(async (r) => {
      const removed = (): void => void calls.push('removed');
      r.waitSignal.addEventListener('abort', removed);
      r.waitSignal.addEventListener('abort', () => calls.push('kept'));
      r.waitSignal.removeEventListener('abort', removed);
      controller.abort(new Error('stop'));
      r.waitSignal.addEventListener('abort', () => calls.push('late'));
      throw r.waitSignal.reason;
    });
    await new BaseLockProvider(backend).acquire('k', { waitMs: 10_000, signal: controller.signal }).catch(() => undefined);
    expect(calls).toEqual(['kept']);
  });

  it('lets calls queued behind another in one provider wait without an AbortController each', async () => {
    const backend: StepBackend = new StepBackend(async () => backend.grant(60_000));
    const provider = new BaseLockProvider(backend);
    const held = await provider.acquire('k');
    const { made, result } = await countControllers(async () => {
      // Ten calls queue locally behind the holder (one backend contender per key per process).
      const waiting = Array.from({ length: 10 }, () => provider.acquire('k', { waitMs: 60_000 }));
      await held.release();
      for (const next of waiting) await (await next).release();
      return waiting.length;
    });
    expect(result).toBe(10);
    expect(made).toBe(0);
    await provider.close();
  });
});

describe('validity deadlines', () => {
  it('reports each lock lost at its own deadline without any read, and never one that was released', async () => {
    const valid = [40, 400, 80];
    const backend: StepBackend = new StepBackend(async () => backend.grant(valid.shift() ?? 0));
    const provider = new BaseLockProvider(backend);
    const lost: string[] = [];
    provider.on('lost', (event) => lost.push(`${event.key}:${event.error.reason ?? ''}`));
    // Not renewed: core would renew a grant this short within a third of its validity.
    const first = await provider.acquire('first', { autoExtend: false });
    const released = await provider.acquire('released', { autoExtend: false });
    const third = await provider.acquire('third', { autoExtend: false });
    await released.release();
    const bothLost = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no loss reported within 5 s')), 5_000);
      provider.on('lost', () => {
        if (lost.length === 2) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await bothLost;
    expect(lost).toEqual(['first:expired', 'third:expired']);
    expect(first.signal.aborted).toBe(true);
    expect(third.state).toBe('lost');
    // Wait past the released lock's old deadline: no loss is reported for it.
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(lost).toHaveLength(2);
    await provider.close();
  });
});
