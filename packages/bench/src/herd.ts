/**
 * Stress: a herd of waiters. One provider holds a key; a second provider (same process, another
 * connection) starts W (default 1,000) concurrent `acquire(key, { waitMs })` (default 200 ms); the
 * holder releases after `releaseAfterMs` (default 100 ms); every waiter that gets the lock releases
 * it at once, so several grants can happen before the waits run out. Measured: how late the calls
 * that timed out settled past their `waitMs` (settle overrun), whether every call settled at all
 * (within a generous bound: an unsettled call is a failure, never a hang), grants, the time from the
 * holder's release to the first grant, and the server requests per grant (counted on the servers
 * with the same definitions as the held-locks scenario).
 */
import { randomUUID } from 'node:crypto';
import { isLockError, LockErrorCode, type LockHandle, type LockProvider } from '@fencelock/core';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '@fencelock/redis';
import { boundedWait } from './bounded-wait.js';
import { KEPT_COUNTERS, ROUND_TRIP_DEFINITIONS, serverRequests } from './held-locks.js';
import { counterDelta, type CounterProbe } from './server-counters.js';
import { round, summarize } from './stats.js';
import { SESSION_TTL_MS, subjectFields, type Backend, type Subject, type SubjectFields } from './subjects.js';

/** Bounds of one herd. */
export interface HerdOptions {
  /** Concurrent acquires (default 1_000). */
  readonly waiters?: number;
  /** Each acquire's `waitMs` (default 200). */
  readonly waitMs?: number;
  /** When the holder releases, ms after the acquires started (default 100). */
  readonly releaseAfterMs?: number;
  /** Every call must settle within this, ms after the acquires started (default waitMs + 30_000); later ones count as unsettled. */
  readonly boundMs?: number;
  /** Quiet time after the last call settled before the counters are read, so that waiters' clean-up requests are counted (default 500). */
  readonly drainMs?: number;
  /** Session timeout / lease TTL of session providers, ms (default {@link SESSION_TTL_MS}). */
  readonly sessionTtlMs?: number;
}

/** The per-request timeout the settle-overrun target compares with, and where it comes from. */
export interface RequestTimeout {
  /** ms; absent for the memory provider, which makes no requests. */
  readonly ms?: number;
  readonly source: string;
}

/** One subject's herd figures. */
export interface HerdResult extends SubjectFields {
  readonly waiters: number;
  readonly waitMs: number;
  readonly releaseAfterMs: number;
  readonly boundMs: number;
  /** Calls that resolved or rejected within `boundMs`. */
  readonly settled: number;
  /** Calls still pending at `boundMs`: each one is a failure. */
  readonly unsettled: number;
  readonly granted: number;
  /** Calls that rejected with `LOCK_TIMEOUT`. */
  readonly timedOut: number;
  /** Calls that rejected with anything else, by error code. */
  readonly otherFailures: Readonly<Record<string, number>>;
  /** Of the timed-out calls, (settle time − waitMs) from each call's own start, ms: p50, p99, max (NaN when none timed out). */
  readonly overrunP50Ms: number;
  readonly overrunP99Ms: number;
  readonly overrunMaxMs: number;
  /** From the holder's release call to the first grant, ms (absent when nothing was granted). */
  readonly releaseToFirstGrantMs?: number;
  /** Server requests from the first acquire to `drainMs` after the last call settled (see `requestsCounted`). */
  readonly serverRequests: number;
  /** `serverRequests` / grants (absent when nothing was granted). */
  readonly serverRequestsPerGrant?: number;
  /** What a server request is on this backend. */
  readonly requestsCounted: string;
  /** The provider's default per-request timeout, the bound for the overrun p99. */
  readonly requestTimeout: RequestTimeout;
  /** Raw counter deltas (non-zero ones). */
  readonly counters: Readonly<Record<string, number>>;
}

// @fencelock/redlock derives its per-master timeout from the lock's TTL and does not export the
// factor or its bounds: these mirror its defaults (requestTimeoutFactor 0.005, kept within [50, 500] ms).
const REDLOCK_NODE_TIMEOUT = { factor: 0.005, floorMs: 50, ceilingMs: 500 } as const;
// @fencelock/etcd's default request timeout is a third of the lease TTL (whole seconds), at most 5 s.
const ETCD_MAX_DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/**
 * The default per-request timeout of `provider` (opened with a session / lease of `sessionTtlMs`)
 * for an acquire with its default TTL.
 */
export function defaultRequestTimeout(backend: Backend, provider: LockProvider, sessionTtlMs: number): RequestTimeout {
  switch (backend) {
    case 'redis':
      return { ms: DEFAULT_REQUEST_TIMEOUT_MS, source: '@fencelock/redis requestTimeoutMs default' };
    case 'redlock': {
      const { factor, floorMs, ceilingMs } = REDLOCK_NODE_TIMEOUT;
      const ms = Math.min(ceilingMs, Math.max(floorMs, Math.ceil(provider.defaultTtlMs * factor)));
      return { ms, source: `@fencelock/redlock per-master timeout for the default ${provider.defaultTtlMs} ms TTL (× ${factor}, within [${floorMs}, ${ceilingMs}] ms)` };
    }
    case 'etcd': {
      const leaseMs = Math.ceil(sessionTtlMs / 1000) * 1000;
      return { ms: Math.min(ETCD_MAX_DEFAULT_REQUEST_TIMEOUT_MS, Math.floor(leaseMs / 3)), source: `@fencelock/etcd requestTimeoutMs default (a third of the ${leaseMs} ms lease, at most 5 s)` };
    }
    case 'zookeeper':
      // Like etcd's: a third of the (granted) session timeout, at most 5 s.
      return { ms: Math.min(5_000, Math.floor(sessionTtlMs / 3)), source: `@fencelock/zookeeper requestTimeoutMs default (a third of the ${sessionTtlMs} ms session timeout, at most 5 s)` };
    case 'memory':
      return { source: 'none: the memory provider makes no requests' };
    case 'postgres':
      return { ms: Math.min(5_000, Math.floor(sessionTtlMs / 3)), source: `@fencelock/postgres requestTimeoutMs default (a third of the ${sessionTtlMs} ms session TTL, at most 5 s)` };
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a herd on `subject` (a fencelock subject: it needs `openProvider`); `probe` reads its servers' counters. */
export async function runHerd(subject: Subject, probe: CounterProbe, options: HerdOptions = {}): Promise<HerdResult> {
  if (subject.openProvider === undefined) throw new Error(`${subject.id} has no provider to run a herd with`);
  const count = options.waiters ?? 1_000;
  const waitMs = options.waitMs ?? 200;
  const releaseAfterMs = options.releaseAfterMs ?? 100;
  const boundMs = options.boundMs ?? waitMs + 30_000;
  const sessionTtlMs = options.sessionTtlMs ?? SESSION_TTL_MS;
  const holderProvider = await subject.openProvider(sessionTtlMs);
  const herdProvider = await subject.openProvider(sessionTtlMs);
  try {
    const key = `herd:${randomUUID()}`;
    // Connections, scripts and sessions are set up before the counters are read.
    await (await herdProvider.acquire(`${key}:warm`, { waitMs: 10_000 })).release();
    const holder = await holderProvider.acquire(key, { waitMs: 10_000 });
    const countersBefore = await probe.read();
    let settled = 0;
    let granted = 0;
    let firstGrantAt: number | undefined;
    const overruns: number[] = [];
    const otherFailures: Record<string, number> = {};
    const herdStarted = performance.now();
    const calls = Array.from({ length: count }, async () => {
      const callStarted = performance.now();
      let handle: LockHandle;
      try {
        handle = await herdProvider.acquire(key, { waitMs });
      } catch (error) {
        settled += 1;
        if (isLockError(error, LockErrorCode.TIMEOUT)) overruns.push(performance.now() - callStarted - waitMs);
        else {
          const code = String((error as { code?: unknown }).code ?? (error as Error).name);
          otherFailures[code] = (otherFailures[code] ?? 0) + 1;
        }
        return;
      }
      settled += 1;
      granted += 1;
      firstGrantAt ??= performance.now();
      await handle.release();
    });
    let releasedAt = Number.NaN;
    const holderReleased = sleep(releaseAfterMs).then(() => {
      releasedAt = performance.now();
      return holder.release();
    });
    // allSettled: one failing release must not end the wait for the other calls.
    await boundedWait(Promise.allSettled([...calls, holderReleased]), Math.max(0, herdStarted + boundMs - performance.now()));
    await sleep(options.drainMs ?? 500);
    const delta = counterDelta(countersBefore, await probe.read());
    const requests = serverRequests(subject.backend, delta);
    const overrun = summarize(overruns);
    return {
      ...subjectFields(subject),
      waiters: count,
      waitMs,
      releaseAfterMs,
      boundMs,
      settled,
      unsettled: count - settled,
      granted,
      timedOut: overruns.length,
      otherFailures,
      overrunP50Ms: round(overrun.p50, 2),
      overrunP99Ms: round(overrun.p99, 2),
      overrunMaxMs: round(overrun.max, 2),
      ...(firstGrantAt === undefined ? {} : { releaseToFirstGrantMs: round(firstGrantAt - releasedAt, 2) }),
      serverRequests: requests,
      ...(granted > 0 ? { serverRequestsPerGrant: round(requests / granted, 2) } : {}),
      requestsCounted: ROUND_TRIP_DEFINITIONS[subject.backend],
      requestTimeout: defaultRequestTimeout(subject.backend, herdProvider, sessionTtlMs),
      counters: Object.fromEntries(Object.entries(delta).filter(([name, value]) => value !== 0 && KEPT_COUNTERS.test(name))),
    };
  } finally {
    // close() also ends calls still pending past the bound; it is bounded too, so a stuck provider cannot hang the bench.
    await boundedWait(Promise.allSettled([herdProvider.close(), holderProvider.close()]), 10_000);
  }
}
