import { getEventListeners } from 'node:events';
import { type AbortLike, RequestTimeoutError } from '@fencelock/core/adapter';
import { describe, expect, it } from 'vitest';
import { PendingRequest, type RequestHost } from '../src/pending-request.js';

/** A request on a host that records the answers it is told of; `outcome` settles with the caller's view. */
function pending(options: { late?: (value: string) => void; signal?: AbortLike } = {}) {
  const answers: { sent: number; error: Error | null }[] = [];
  const host: RequestHost = {
    answered: (sent, error) => answers.push({ sent, error: error as Error | null }),
    failure: (error, what) => new Error(`${what}: ${(error as Error).message}`),
  };
  let request!: PendingRequest<string>;
  const outcome = new Promise<string>((resolve, reject) => {
    request = new PendingRequest<string>(host, 'creating a node', 42, 3_000, { resolve, reject }, options.late, options.signal);
  });
  return { request, outcome, answers };
}

describe('PendingRequest', () => {
  it('resolves with the answer and tells the host when it was sent', async () => {
    const { request, outcome, answers } = pending();
    request.done(null, '/lock-1');
    expect(await outcome).toBe('/lock-1');
    expect(request.settled).toBe(true);
    expect(answers).toEqual([{ sent: 42, error: null }]);
  });

  it('rejects with what the host makes of the client error', async () => {
    const { request, outcome } = pending();
    request.done(new Error('NoAuth'), '');
    await expect(outcome).rejects.toThrow('creating a node: NoAuth');
  });

  it('times out with RequestTimeoutError; a success answered afterwards goes to `late`, and still proves contact', async () => {
    const late: string[] = [];
    const { request, outcome, answers } = pending({ late: (value) => late.push(value) });
    request.expire();
    const error = await outcome.catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as RequestTimeoutError).timeoutMs).toBe(3_000);
    request.done(null, '/lock-7');
    expect(late).toEqual(['/lock-7']);
    expect(answers).toHaveLength(1);
    // A second expiry (the ring's, after an abort) changes nothing.
    request.expire();
  });

  it('rejects with the reason of the caller\'s signal, and stops listening once settled', async () => {
    const controller = new AbortController();
    const { outcome } = pending({ signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(outcome).rejects.toThrow('caller gave up');

    // Listening while in flight, not after: a signal shared by many requests must not collect listeners.
    const later = new AbortController();
    const answered = pending({ signal: later.signal });
    expect(getEventListeners(later.signal, 'abort')).toHaveLength(1);
    answered.request.done(null, '/lock-2');
    expect(await answered.outcome).toBe('/lock-2');
    expect(getEventListeners(later.signal, 'abort')).toHaveLength(0);
  });

  it("rejects with the reason of a waiting call's abort (an AbortLike that calls plain functions), and stops listening once settled", async () => {
    const { signal, abort, listeners } = callAbort();
    const { outcome } = pending({ signal });
    expect(listeners()).toBe(1);
    const reason = new Error('caller gave up');
    abort(reason);
    expect(await outcome.catch((error: unknown) => error)).toBe(reason);
    expect(listeners()).toBe(0);

    const later = callAbort();
    const answered = pending({ signal: later.signal });
    expect(later.listeners()).toBe(1);
    answered.request.done(null, '/lock-3');
    expect(await answered.outcome).toBe('/lock-3');
    expect(later.listeners()).toBe(0);
  });

  it('rejects with the error of a request the client could not send', async () => {
    const { request, outcome } = pending();
    request.failedToSend(new Error('invalid path'));
    await expect(outcome).rejects.toThrow('invalid path');
  });
});

/** An abort like a waiting call's `waitSignal` (core's `AcquireCall`): a flag and plain function listeners, no event target. */
function callAbort(): { signal: AbortLike; abort: (reason: unknown) => void; listeners: () => number } {
  let listeners: (() => void)[] = [];
  const state = { aborted: false, reason: undefined as unknown };
  const signal: AbortLike = {
    get aborted() {
      return state.aborted;
    },
    get reason() {
      return state.reason;
    },
    addEventListener: (_type, listener) => {
      if (!state.aborted) listeners.push(listener);
    },
    removeEventListener: (_type, listener) => {
      listeners = listeners.filter((entry) => entry !== listener);
    },
  };
  const abort = (reason: unknown): void => {
    if (state.aborted) return;
    state.aborted = true;
    state.reason = reason;
    const called = listeners;
    listeners = [];
    for (const listener of called) listener();
  };
  return { signal, abort, listeners: () => listeners.length };
}
