/**
 * One client's seeded workload: W1 (mutex hold/release, holds of 0–1.5 × TTL, some abandoned to
 * expire; or, with `semaphoreLimit`, holds of a counting semaphore's permits; or, with `election`,
 * leaderships), W2 (fenced writes through the fenced store while holding a mutex or leading) and
 * W4 (token probe: acquire and release at once). Every operation goes through the checker's lock
 * recorder.
 */
import type { LockHandle, LockProvider } from '@fencelock/core';
import {
  type FencedStoreClient,
  type HistorySink,
  type LockRecorder,
  monotonicNs,
  performanceMsToMonotonicNs,
} from '@fencelock/history-checker';
import type { WorkloadParams } from './protocol.js';
import type { Rng } from './rng.js';

/** What {@link runWorkload} drives. */
export interface WorkloadContext {
  readonly proc: string;
  readonly provider: LockProvider;
  readonly recorder: LockRecorder;
  readonly sink: HistorySink;
  readonly store: FencedStoreClient;
  readonly rng: Rng;
  readonly keys: readonly string[];
  readonly probeKey: string;
  readonly ttlMs: number;
  /** Session backends: no per-acquire TTL, no `autoExtend: false`. */
  readonly session: boolean;
  readonly params: WorkloadParams;
  /** Aborted when the client must stop. */
  readonly signal: AbortSignal;
  /** performance.now() after which no new operation starts. */
  readonly endAt: number;
}

/** Resolves after `ms`, or early (never rejecting) when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Session backends renew every lock of a session with the session (no `extended` event): record
 * each new `validUntil` as an automatic renewal (`extend ok` without invocation), as the checker
 * requires, by watching the open handles every 20 ms.
 */
export function watchSessionRenewals(sink: HistorySink, ttlMs: number, proc: string): { track(handle: LockHandle): () => void; stop(): void } {
  const tracked = new Map<LockHandle, number>();
  const timer = setInterval(() => {
    for (const [handle, seen] of tracked) {
      const state = handle.state;
      if (state !== 'held' && state !== 'uncertain') continue;
      const validUntil = handle.validUntil;
      if (!(validUntil > seen + 1)) continue;
      tracked.set(handle, validUntil);
      sink({
        tc: monotonicNs(),
        proc,
        key: handle.key,
        f: 'extend',
        type: 'ok',
        token: handle.fencingToken ?? null,
        lockId: handle.ownerId,
        validUntil: performanceMsToMonotonicNs(validUntil),
        ttlGranted: ttlMs,
        err: null,
      });
    }
  }, 20);
  timer.unref();
  return {
    track(handle) {
      tracked.set(handle, handle.validUntil);
      return () => tracked.delete(handle);
    },
    stop: () => clearInterval(timer),
  };
}

/** Runs operations until `endAt` or the signal; returns how many it started. */
export async function runWorkload(context: WorkloadContext): Promise<number> {
  const { rng, params, signal } = context;
  const renewals = context.session ? watchSessionRenewals(context.sink, context.ttlMs, context.proc) : undefined;
  let operations = 0;
  let writeIndex = 0;
  // Bounded in count as well as in time: even a backend answering instantly cannot spin forever.
  const maxOperations = 100_000;
  try {
    while (!signal.aborted && performance.now() < context.endAt && operations < maxOperations) {
      operations += 1;
      const remainingMs = context.endAt - performance.now();
      const waitMs = Math.max(0, Math.min(params.waitMs, remainingMs));
      if (rng.next() < params.probeShare) {
        // W4: acquire and release at once, to check token monotonicity.
        const handle = await context.recorder.acquire(context.provider, context.probeKey, acquireOptions(context, waitMs, true));
        if (handle !== undefined) await context.recorder.release(handle);
      } else {
        const abandon = !context.session && rng.next() < params.abandonShare;
        const key = rng.pick(context.keys);
        const holdMs = abandon ? context.ttlMs * 1.3 : rng.between(params.holdMin, params.holdMax) * context.ttlMs;
        if (params.semaphoreLimit > 0) {
          await holdPermits(context, key, holdMs, acquireOptions(context, waitMs, !abandon), renewals);
          await pause(rng.between(0, params.idleMaxMs), signal);
          continue;
        }
        const options = acquireOptions(context, waitMs, !abandon);
        // A leader's term is its fencing token: its writes are fenced like a mutex holder's.
        const handle = params.election
          ? await context.recorder.campaign(context.provider, key, { ...options, value: context.proc })
          : await context.recorder.acquire(context.provider, key, options);
        if (handle !== undefined) {
          const untrack = renewals?.track(handle);
          const until = performance.now() + holdMs;
          // W2: fenced writes while the lock is (believed) held; a bounded number per hold.
          for (let i = 0; i < 1_000 && performance.now() < until && !signal.aborted; i += 1) {
            if (!handle.isHeld()) break;
            writeIndex += 1;
            await context.recorder.write(handle, context.store, `${context.proc}:${writeIndex}`);
            await pause(Math.min(until - performance.now(), rng.between(params.writeGapMinMs, params.writeGapMaxMs)), signal);
          }
          if (!handle.isHeld() && handle.state === 'lost' && params.lateWrite && handle.fencingToken !== undefined) {
            // The write a paused process had already decided on goes out after its loss, around the
            // library (the store logs it; the history does not): only the fence can refuse it.
            await context.store.write({ key: handle.key, token: handle.fencingToken, proc: context.proc, value: `${context.proc}:late` }).catch(() => undefined);
          }
          await pause(until - performance.now(), signal);
          await context.recorder.release(handle);
          untrack?.();
        }
      }
      await pause(rng.between(0, params.idleMaxMs), signal);
    }
  } finally {
    renewals?.stop();
  }
  return operations;
}

/**
 * W1 on a counting semaphore (S7): takes one permit of `semaphoreLimit` (or, where the backend takes
 * several at once, one or two at random, so that permit sums matter), holds it for `holdMs`, releases.
 */
async function holdPermits(
  context: WorkloadContext,
  key: string,
  holdMs: number,
  options: ReturnType<typeof acquireOptions>,
  renewals: ReturnType<typeof watchSessionRenewals> | undefined,
): Promise<void> {
  const limit = context.params.semaphoreLimit;
  const multi = context.provider.capabilities.semaphore === 'multi-permit' && limit > 1;
  const permits = multi && context.rng.next() < 0.3 ? 2 : 1;
  const handle = await context.recorder.acquireSemaphore(context.provider, key, { ...options, limit, permits });
  if (handle === undefined) return;
  const untrack = renewals?.track(handle);
  await pause(holdMs, context.signal);
  await context.recorder.release(handle);
  untrack?.();
}

function acquireOptions(context: WorkloadContext, waitMs: number, autoExtend: boolean) {
  return context.session
    ? { waitMs, signal: context.signal }
    : { waitMs, signal: context.signal, ttlMs: context.ttlMs, autoExtend };
}
