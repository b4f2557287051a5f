import { type AbortLike, RequestTimeoutError } from '@fencelock/core/adapter';
import type { Exception } from 'node-zookeeper-client';

/** What a {@link PendingRequest} needs of its session. */
export interface RequestHost {
  /** The client called back for a request sent at `sent` (monotonic ms) with `error` (null: success). */
  answered(sent: number, error: Error | Exception | null): void;
  /** What the caller gets for the client's `error` (a refusal becomes `LOCK_FORBIDDEN`). */
  failure(error: Error | Exception, what: string): unknown;
}

// Listener options of the caller's signal: one object for every request.
const ONCE = { once: true } as const;

/**
 * One client request in flight: settled by the client's callback, by its timeout or by the caller's
 * signal, whichever comes first, with one promise. The timeout is the session's shared deadline ring
 * (core's `RequestDeadlines`, which calls {@link expire}); the signal (an `AbortLike`: a waiting
 * call's `waitSignal`, which calls plain functions only) is listened to by one function, made only
 * for a request that has a signal. A chain of promises and a timer per request cost more client CPU
 * than the rest of an acquisition's four requests.
 *
 * Once given up (timed out, aborted), a success the client reports later goes to `late`, so that the
 * caller can undo what it did (a late create).
 */
export class PendingRequest<T> {
  /** The callback the client is given. */
  readonly done: (error: Error | Exception | null, value: T) => void;
  readonly #host: RequestHost;
  readonly #what: string;
  readonly #sent: number;
  readonly #timeoutMs: number;
  readonly #resolve: (value: T) => void;
  readonly #reject: (reason: unknown) => void;
  readonly #late: ((value: T) => void) | undefined;
  readonly #signal: AbortLike | undefined;
  readonly #onAbort: (() => void) | undefined;
  #settled = false;

  constructor(
    host: RequestHost,
    what: string,
    sent: number,
    timeoutMs: number,
    settle: { resolve: (value: T) => void; reject: (reason: unknown) => void },
    late: ((value: T) => void) | undefined,
    signal: AbortLike | undefined,
  ) {
    this.#host = host;
    this.#what = what;
    this.#sent = sent;
    this.#timeoutMs = timeoutMs;
    this.#resolve = settle.resolve;
    this.#reject = settle.reject;
    this.#late = late;
    this.#signal = signal;
    this.done = (error, value) => this.#answer(error, value);
    if (signal === undefined) this.#onAbort = undefined;
    else {
      // The caller's signal aborted: give up with its reason.
      const onAbort = (): void => this.#giveUp(signal.reason);
      this.#onAbort = onAbort;
      signal.addEventListener('abort', onAbort, ONCE);
    }
  }

  /** Whether the request is over for its caller (answered, timed out or aborted). */
  get settled(): boolean {
    return this.#settled;
  }

  /** No reply in time: the caller gets `RequestTimeoutError` (the request may still be applied). */
  expire(): void {
    this.#giveUp(new RequestTimeoutError(this.#what, this.#timeoutMs));
  }

  /** The request could not be sent (the client threw). */
  failedToSend(error: unknown): void {
    if (this.#end()) this.#reject(error);
  }

  #answer(error: Error | Exception | null, value: T): void {
    this.#host.answered(this.#sent, error);
    if (!this.#end()) {
      if (error === null) this.#late?.(value);
      return;
    }
    if (error === null) this.#resolve(value);
    else this.#reject(this.#host.failure(error, this.#what));
  }

  #giveUp(reason: unknown): void {
    if (this.#end()) this.#reject(reason);
  }

  // Marks the request settled; false when it already was.
  #end(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener('abort', this.#onAbort);
    return true;
  }
}
