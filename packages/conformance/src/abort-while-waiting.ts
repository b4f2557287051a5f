import type { LockProvider } from '@fencelock/core';
import { nextEvent, within } from './context.js';

/**
 * Counts the `AbortController`s constructed while `work` runs (through the global constructor): what a
 * waiting acquire costs when something reads the call's `request.signal`, which core builds on first
 * read. An adapter that waits on `request.waitSignal` makes none.
 */
export async function countAbortControllers<T>(work: () => Promise<T>): Promise<{ readonly result: T; readonly made: number }> {
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

/** Options of {@link abortWhileWaiting}. */
export interface AbortWhileWaitingOptions {
  /**
   * How long after its `contended` event the call is left waiting before the abort, so that it is past
   * its first rounds (a watch, a re-check) and inside its wait (default 300 ms). Only how much of the
   * wait is exercised depends on it: the outcome checked is the same however long it is.
   */
  readonly waitingMs?: number;
  /** Bound on the call settling once aborted (default 10 s). */
  readonly settleWithinMs?: number;
}

/**
 * Starts `acquire` on `provider` for `key` (queued behind a holder the caller set up), waits for the
 * provider's `contended` event for `key` and a moment more, then aborts the call with `reason`.
 * Resolves what the call settled with (its error, for an abort) and how many `AbortController`s were
 * constructed meanwhile, the caller's own excepted.
 */
export function abortWhileWaiting(
  provider: LockProvider,
  key: string,
  acquire: (signal: AbortSignal) => Promise<unknown>,
  reason: Error,
  options: AbortWhileWaitingOptions = {},
): Promise<{ readonly result: unknown; readonly made: number }> {
  const controller = new AbortController();
  return countAbortControllers(async () => {
    const contended = nextEvent(provider, 'contended', (event) => event.key === key, 10_000);
    const acquiring = acquire(controller.signal).catch((error: unknown) => error);
    await contended;
    await new Promise((resolve) => setTimeout(resolve, options.waitingMs ?? 300));
    controller.abort(reason);
    return within(acquiring, options.settleWithinMs ?? 10_000, 'the aborted acquire to settle');
  });
}
