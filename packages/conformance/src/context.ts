import { randomUUID } from 'node:crypto';
import type { LockCapabilities, LockEventMap, LockProvider } from '@fencelock/core';
import { afterAll, afterEach } from 'vitest';
import type { ConformanceOptions } from './options.js';

/** What every group of cases shares: provider lifecycle, unique keys, bounded waits. */
export interface SuiteContext {
  readonly options: ConformanceOptions;
  /** A fresh provider, closed after the current case. */
  provider(): Promise<LockProvider>;
  /** A key no other case (or run) uses. */
  key(label: string): string;
  /** The provider's capabilities (from a provider made for the purpose). */
  capabilities(): Promise<LockCapabilities>;
  /** The TTL for expiry cases, in ms, and whether the provider is session-bound. */
  ttl(): Promise<{ ttlMs: number; session: boolean }>;
  /** A wait bound in ms, scaled by `timeScale`. */
  bound(ms: number): number;
  /** The per-case timeout vitest should use for a case that waits about `ms` in all. */
  caseTimeout(ms: number): number;
}

/** Builds the shared context and registers its cleanup hooks (call inside the describe block). */
export function createSuiteContext(options: ConformanceOptions): SuiteContext {
  const scale = options.timeScale ?? 1;
  const prefix = options.keyPrefix ?? 'conformance:';
  const open: LockProvider[] = [];
  let capabilities: Promise<LockCapabilities> | undefined;

  const provider = async (): Promise<LockProvider> => {
    const made = await options.createProvider();
    open.push(made);
    return made;
  };

  afterEach(async () => {
    const closing = open.splice(0);
    await Promise.allSettled(closing.map((p) => p.close()));
  });
  afterAll(async () => {
    await Promise.allSettled(open.splice(0).map((p) => p.close()));
  });

  const context: SuiteContext = {
    options,
    provider,
    key: (label) => `${prefix}${label}:${randomUUID()}`,
    capabilities: () => {
      capabilities ??= (async () => {
        const made = await options.createProvider();
        try {
          return made.capabilities;
        } finally {
          await made.close();
        }
      })();
      return capabilities;
    },
    ttl: async () => {
      const caps = await context.capabilities();
      if (caps.expiry === 'session') {
        const made = await options.createProvider();
        try {
          return { ttlMs: made.defaultTtlMs, session: true };
        } finally {
          await made.close();
        }
      }
      const wanted = options.shortTtlMs ?? Math.max(caps.minTtlMs, 400);
      return { ttlMs: Math.ceil(wanted / caps.ttlResolutionMs) * caps.ttlResolutionMs, session: false };
    },
    bound: (ms) => Math.ceil(ms * scale),
    caseTimeout: (ms) => Math.ceil((ms + 10_000) * scale),
  };
  return context;
}

/** Rejects with a clear message if `promise` does not settle within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Resolves the abort reason once `signal` aborts, or rejects after `ms`. */
export function abortedWithin(signal: AbortSignal, ms: number, what: string): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return within(
    new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
    ms,
    what,
  );
}

/** Resolves the next `event` from `provider` matching `predicate`, or rejects after `ms`. */
export function nextEvent<E extends keyof LockEventMap>(
  provider: LockProvider,
  event: E,
  predicate: (payload: LockEventMap[E]) => boolean,
  ms: number,
): Promise<LockEventMap[E]> {
  let unsubscribe = (): void => undefined;
  const seen = new Promise<LockEventMap[E]>((resolve) => {
    unsubscribe = provider.on(event, (payload) => {
      if (predicate(payload)) resolve(payload);
    });
  });
  return within(seen, ms, `event "${event}"`).finally(() => unsubscribe());
}

/** Settles a promise into a value that says whether it is still pending (for "still waiting" checks). */
export async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const marker = Symbol('pending');
  const winner = await Promise.race([promise.then(() => undefined, () => undefined), new Promise((r) => setImmediate(() => r(marker)))]);
  return winner === marker;
}

/** Freezes this thread for `ms` (as a long GC pause or a stopped VM would), timers and sockets included. */
export function freezeThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
