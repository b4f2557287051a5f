import { monotonicNow } from '../clock.js';
import { afterPendingReplies } from './timeout.js';
import { WakeTimer } from './wake-timer.js';

/** What {@link RequestDeadlines} does with the requests it watches. */
export interface RequestDeadlineHandlers<T> {
  /** Whether `request` has its answer already (it is then forgotten without being failed). */
  settled(request: T): boolean;
  /** `request` ran out of time: fail it (failing one that has just settled must be harmless). */
  expire(request: T): void;
}

// The ring's first size; it doubles when full (never shrinks: a provider's requests in flight).
const INITIAL_CAPACITY = 16;

/**
 * Per-request timeouts for requests that all get the same bound, behind one timer: their deadlines
 * come in the order they were sent, so a ring of requests in sending order is all the bookkeeping
 * (a timer per request, as a client library's command timeout arms, costs more than the rest of a
 * request's client-side work). Requests that settled leave the ring from its oldest end whenever
 * one is added and when the timer fires, so the ring holds about the requests in flight. The timer
 * is armed for the oldest deadline and left alone otherwise; it is unref'd.
 */
export class RequestDeadlines<T> {
  readonly #timeoutMs: number;
  readonly #handlers: RequestDeadlineHandlers<T>;
  #requests: (T | undefined)[] = new Array<T | undefined>(INITIAL_CAPACITY);
  #dueAt = new Float64Array(INITIAL_CAPACITY);
  // The oldest request's slot, and how many slots from it on are in use.
  #head = 0;
  #count = 0;
  readonly #timer = new WakeTimer(() => this.#expireDue());
  // Counts clear() calls: expiries decided before one are dropped.
  #cleared = 0;

  /** Every request gets `timeoutMs` from when it is added. */
  constructor(timeoutMs: number, handlers: RequestDeadlineHandlers<T>) {
    this.#timeoutMs = timeoutMs;
    this.#handlers = handlers;
  }

  /** How many requests are watched (settled ones included until they leave). */
  get size(): number {
    return this.#count;
  }

  /** Watches `request`, just sent: it is expired `timeoutMs` from now unless it settled by then. */
  add(request: T): void {
    this.#dropSettled();
    if (this.#count === this.#requests.length) this.#grow();
    const slot = (this.#head + this.#count) % this.#requests.length;
    const dueAt = monotonicNow() + this.#timeoutMs;
    this.#requests[slot] = request;
    this.#dueAt[slot] = dueAt;
    this.#count += 1;
    if (this.#timer.at === Number.POSITIVE_INFINITY) this.#timer.arm(dueAt);
  }

  /** Stops watching every request (none is expired) and the timer. */
  clear(): void {
    this.#cleared += 1;
    this.#requests.fill(undefined);
    this.#head = 0;
    this.#count = 0;
    this.#timer.clear();
  }

  #dropSettled(): void {
    while (this.#count > 0) {
      const oldest = this.#requests[this.#head];
      if (oldest !== undefined && !this.#handlers.settled(oldest)) return;
      this.#shift();
    }
  }

  #shift(): T | undefined {
    const request = this.#requests[this.#head];
    this.#requests[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.#requests.length;
    this.#count -= 1;
    return request;
  }

  #grow(): void {
    const capacity = this.#requests.length;
    const requests = new Array<T | undefined>(capacity * 2);
    const dueAt = new Float64Array(capacity * 2);
    for (let index = 0; index < this.#count; index += 1) {
      const slot = (this.#head + index) % capacity;
      requests[index] = this.#requests[slot];
      dueAt[index] = this.#dueAt[slot]!;
    }
    this.#requests = requests;
    this.#dueAt = dueAt;
    this.#head = 0;
  }

  // Requests answered in the meantime (replies read after a pause) are not failed.
  #expire(due: readonly T[]): void {
    for (const request of due) if (!this.#handlers.settled(request)) this.#handlers.expire(request);
  }

  #expireDue(): void {
    const now = monotonicNow();
    // Taken out first, failed after: failing a request may send (and add) another one.
    let due: T[] | undefined;
    while (this.#count > 0 && this.#dueAt[this.#head]! <= now) {
      const request = this.#shift();
      if (request !== undefined && !this.#handlers.settled(request)) (due ??= []).push(request);
    }
    this.#dropSettled();
    if (this.#count > 0) this.#timer.arm(this.#dueAt[this.#head]!);
    if (due !== undefined) {
      const expiring = due;
      const cleared = this.#cleared;
      afterPendingReplies(() => {
        if (this.#cleared === cleared) this.#expire(expiring);
      });
    }
  }
}
