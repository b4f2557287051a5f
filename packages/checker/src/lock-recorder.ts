import {
  type AcquireOptions,
  type AcquireSemaphoreOptions,
  type CampaignOptions,
  type LeaderHandle,
  type LockHandle,
  type LockProvider,
  type SemaphoreHandle,
  LockErrorCode,
  isLockError,
} from '@fencelock/core';
import type { FencedStoreClient } from './fenced-store-client.js';
import type { ClientFunction, OperationType } from './history.js';
import type { HistoryEventInput } from './history-writer.js';
import { monotonicNs, performanceMsToMonotonicNs } from './mono-clock.js';

/** Where recorded events go: a {@link HistoryWriter}'s `record`, or a function sending them to the parent over IPC. */
export type HistorySink = (event: HistoryEventInput) => unknown;

/** Options of {@link createLockRecorder}. */
export interface LockRecorderOptions {
  /** This client's id, written as `proc`. */
  readonly proc: string;
  readonly sink: HistorySink;
  /** The client clock for `tc`, ns. `t` is left to the sink (the writer's clock, or the parent's on receipt). @default system-wide monotonic ns */
  readonly now?: () => number;
}

/**
 * Runs lock operations for a fault-suite client and records each one (invoke, then ok / fail / info)
 * in the history format. Errors are recorded, not thrown: the workload goes on.
 */
export interface LockRecorder {
  /** Records the provider's automatic renewals (`extend ok`), loss signals and connection state. Returns the unsubscribe function. */
  watch(provider: LockProvider): () => void;
  /** `provider.acquire`; resolves the handle, or `undefined` when it failed or its outcome is unknown. */
  acquire(provider: LockProvider, key: string, options?: AcquireOptions): Promise<LockHandle | undefined>;
  /**
   * `provider.acquireSemaphore`, recorded as an `acquire` with the semaphore's `limit` and `permits`
   * (what the checker's S7 needs); resolves the handle, or `undefined` when it failed or its outcome is unknown.
   */
  acquireSemaphore(provider: LockProvider, key: string, options: AcquireSemaphoreOptions): Promise<SemaphoreHandle | undefined>;
  /**
   * `provider.campaign`, recorded as an `acquire` of key `name` with the campaigner's `value` (what
   * the checker's S8 needs; the token is the term); resolves the leadership, or `undefined` when the
   * campaign failed or its outcome is unknown. Resign with {@link release}.
   */
  campaign(provider: LockProvider, name: string, options: CampaignOptions): Promise<LeaderHandle | undefined>;
  /** `handle.extend`; resolves whether it succeeded. */
  extend(handle: LockHandle, ttlMs?: number): Promise<boolean>;
  /** `handle.release`; resolves what it resolved (`true` = was still held). */
  release(handle: LockHandle): Promise<boolean>;
  /** A write through the library: `assertHeld()`, then the fenced store with the handle's token. Resolves whether it was accepted. */
  write(handle: LockHandle, store: FencedStoreClient, value?: string): Promise<boolean>;
}

// Refused before any I/O, so nothing can have happened: a determinate failure. Anything else
// (timeouts, lost connections, quorum errors, aborts mid-wait) may have taken effect: `info`.
const DETERMINATE_FAILURES: ReadonlySet<string> = new Set([LockErrorCode.INVALID_ARGUMENT, LockErrorCode.UNSUPPORTED]);

function errorCode(error: unknown): string {
  if (isLockError(error)) return error.code;
  return error instanceof Error ? error.name : 'unknown';
}

/** Creates a recorder for one client process. */
export function createLockRecorder(options: LockRecorderOptions): LockRecorder {
  const now = options.now ?? monotonicNs;
  const record = (
    key: string,
    f: ClientFunction,
    type: OperationType,
    fields: {
      token?: bigint | null;
      lockId?: string | null;
      validUntil?: number | null;
      ttlGranted?: number | null;
      err?: string | null;
      semaphore?: { limit: number; permits: number };
      value?: string;
    } = {},
  ): void => {
    options.sink({
      ...fields.semaphore,
      ...(fields.value === undefined ? {} : { value: fields.value }),
      tc: now(),
      proc: options.proc,
      key,
      f,
      type,
      token: fields.token ?? null,
      lockId: fields.lockId ?? null,
      validUntil: fields.validUntil ?? null,
      ttlGranted: fields.ttlGranted ?? null,
      err: fields.err ?? null,
    });
  };
  const lockFields = (handle: LockHandle): { token: bigint | null; lockId: string } => ({ token: handle.fencingToken ?? null, lockId: handle.ownerId });

  return {
    watch(provider) {
      const stops = [
        provider.on('extended', (event) => {
          // Manual extensions are recorded by `extend` with their invocation.
          if (event.automatic) record(event.key, 'extend', 'ok', { lockId: event.ownerId, validUntil: performanceMsToMonotonicNs(event.validUntil) });
        }),
        provider.on('lost', (event) => record(event.key, 'lost', 'info', { lockId: event.ownerId, err: event.error.reason ?? event.error.code })),
        provider.on('uncertain', (event) => record(event.key, 'suspended', 'info', { lockId: event.ownerId })),
        provider.on('recovered', (event) => record(event.key, 'reconnected', 'info', { lockId: event.ownerId })),
      ];
      return () => {
        for (const stop of stops) stop();
      };
    },

    async acquire(provider, key, acquireOptions = {}) {
      record(key, 'acquire', 'invoke');
      try {
        const handle = await provider.acquire(key, acquireOptions);
        // ttlGranted: the requested TTL; the handle does not expose the granted one (its validUntil does reflect it).
        record(key, 'acquire', 'ok', {
          ...lockFields(handle),
          validUntil: performanceMsToMonotonicNs(handle.validUntil),
          ttlGranted: acquireOptions.ttlMs ?? provider.defaultTtlMs,
        });
        return handle;
      } catch (error) {
        const code = errorCode(error);
        record(key, 'acquire', DETERMINATE_FAILURES.has(code) ? 'fail' : 'info', { err: code });
        return undefined;
      }
    },

    async acquireSemaphore(provider, key, acquireOptions) {
      // What was asked for: a refused call (bad input) records what it was given, if it is a count.
      const semaphore = { limit: acquireOptions.limit, permits: acquireOptions.permits ?? 1 };
      const recordable = Number.isSafeInteger(semaphore.limit) && semaphore.limit > 0 && Number.isSafeInteger(semaphore.permits) && semaphore.permits > 0;
      record(key, 'acquire', 'invoke', recordable ? { semaphore } : {});
      try {
        const handle = await provider.acquireSemaphore(key, acquireOptions);
        record(key, 'acquire', 'ok', {
          ...lockFields(handle),
          validUntil: performanceMsToMonotonicNs(handle.validUntil),
          ttlGranted: acquireOptions.ttlMs ?? provider.defaultTtlMs,
          semaphore: { limit: handle.limit, permits: handle.permits },
        });
        return handle;
      } catch (error) {
        const code = errorCode(error);
        const determinate = DETERMINATE_FAILURES.has(code) || code === LockErrorCode.LIMIT_MISMATCH;
        record(key, 'acquire', determinate ? 'fail' : 'info', { err: code, ...(recordable ? { semaphore } : {}) });
        return undefined;
      }
    },

    async campaign(provider, name, campaignOptions) {
      // A value that is not a string (bad input) is not recorded as one: the acquire is then a lock's.
      const value = typeof campaignOptions?.value === 'string' ? { value: campaignOptions.value } : {};
      record(name, 'acquire', 'invoke', value);
      try {
        const handle = await provider.campaign(name, campaignOptions);
        record(name, 'acquire', 'ok', {
          ...lockFields(handle),
          validUntil: performanceMsToMonotonicNs(handle.validUntil),
          ttlGranted: campaignOptions.ttlMs ?? provider.defaultTtlMs,
          value: handle.value,
        });
        return handle;
      } catch (error) {
        const code = errorCode(error);
        record(name, 'acquire', DETERMINATE_FAILURES.has(code) ? 'fail' : 'info', { err: code, ...value });
        return undefined;
      }
    },

    async extend(handle, ttlMs) {
      record(handle.key, 'extend', 'invoke', lockFields(handle));
      try {
        await handle.extend(ttlMs);
        record(handle.key, 'extend', 'ok', { ...lockFields(handle), validUntil: performanceMsToMonotonicNs(handle.validUntil), ttlGranted: ttlMs ?? null });
        return true;
      } catch (error) {
        const code = errorCode(error);
        const determinate = code === LockErrorCode.LOST || code === LockErrorCode.NOT_HELD || DETERMINATE_FAILURES.has(code);
        record(handle.key, 'extend', determinate ? 'fail' : 'info', { ...lockFields(handle), err: code });
        return false;
      }
    },

    async release(handle) {
      record(handle.key, 'release', 'invoke', lockFields(handle));
      try {
        const released = await handle.release();
        record(handle.key, 'release', released ? 'ok' : 'fail', { ...lockFields(handle), err: released ? null : 'not-held' });
        return released;
      } catch (error) {
        record(handle.key, 'release', 'info', { ...lockFields(handle), err: errorCode(error) });
        return false;
      }
    },

    async write(handle, store, value) {
      const fields = lockFields(handle);
      record(handle.key, 'write', 'invoke', fields);
      try {
        handle.assertHeld();
      } catch (error) {
        record(handle.key, 'write', 'fail', { ...fields, err: errorCode(error) });
        return false;
      }
      if (fields.token === null) {
        record(handle.key, 'write', 'fail', { ...fields, err: 'no-token' });
        return false;
      }
      try {
        const { accepted } = await store.write({ key: handle.key, token: fields.token, proc: options.proc, ...(value === undefined ? {} : { value }) });
        record(handle.key, 'write', accepted ? 'ok' : 'fail', { ...fields, err: accepted ? null : LockErrorCode.STALE_TOKEN });
        return accepted;
      } catch (error) {
        // The request may have reached the store: unknown outcome.
        record(handle.key, 'write', 'info', { ...fields, err: errorCode(error) });
        return false;
      }
    },
  };
}
